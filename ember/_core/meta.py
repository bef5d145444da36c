"""Shape/dtype rules: the metadata objects they run on, their category helpers, and the check.

Every `Op` carries a rule ``shape(*inputs, **params)`` (see `ember._core.op.Op`)
that says what the kernel returns without running it: tracing, export and dynamic
shapes run on rules alone.  Rules receive `TensorMeta` objects where the kernel
receives arrays; sizes may be symbolic (objects supporting ``+ - * // ==`` with
ints), so rules use plain arithmetic on sizes, never NumPy.

`check_shapes(True)` (or ``EMBER_CHECK_SHAPES=1`` at import) pushes a dispatch
mode that runs every operator, then its rule, and raises an AssertionError when
they disagree; eager calls pay nothing while it is off.
"""
import os

import numpy as np

from . import dtype as _dt
from .dispatch import DispatchMode
from .state import STATE
from .tensor import Tensor

__all__ = ["TensorMeta", "DataDependentShape", "meta_of", "check_shapes", "ShapeCheckMode",
           "as_dtype", "promote", "broadcast_shapes", "same", "broadcast", "broadcast_float",
           "broadcast_bool", "unary_float", "unary_real", "predicate", "wrap_dim",
           "reduce_shape", "reduction", "numel", "is_one", "slice_len", "index_view_shape",
           "infer_view_shape", "float_dtype", "run_rule"]


class DataDependentShape(Exception):
    """Raised by the rule of an op whose output shape depends on input values (nonzero, ...)."""


class TensorMeta:
    """What a rule knows of a tensor: ``shape`` (ints or symbolic sizes) and ember ``dtype``."""
    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = tuple(shape)
        self.dtype = dtype

    @property
    def ndim(self):
        return len(self.shape)

    def dim(self):
        return len(self.shape)

    def __repr__(self):
        return f"TensorMeta({list(self.shape)}, {self.dtype})"

    def __eq__(self, other):
        return isinstance(other, TensorMeta) and self.shape == other.shape and \
            self.dtype == other.dtype

    __hash__ = None


def meta_of(x):
    """Tensors (and NumPy scalars, which kernels treat as 0-dim arrays) become `TensorMeta`."""
    if isinstance(x, Tensor):
        return TensorMeta(x._data.shape, _dt.FROM_NP[x._data.dtype])
    if isinstance(x, np.ndarray):
        return TensorMeta(x.shape, _dt.FROM_NP[x.dtype])
    if isinstance(x, np.generic):
        return TensorMeta((), _dt.FROM_NP[x.dtype])
    return x


def as_dtype(d):
    """An ember dtype from an ember dtype, a NumPy dtype (as ops' params carry them) or None."""
    if d is None or isinstance(d, _dt.dtype):
        return d
    return _dt.FROM_NP[np.dtype(d)]


def float_dtype(d):
    """The dtype a floating function computes in: integers and bool go to the default float."""
    return _dt.get_default_dtype() if d.category < 2 else d


# ---- category helpers ---------------------------------------------------------------------

def promote(*xs):
    """torch's result dtype of metas and Python scalars (dimensioned > 0-dim > scalars)."""
    pairs = [(x.dtype, len(x.shape)) for x in xs if isinstance(x, TensorMeta)]
    scalars = [x for x in xs if x is not None and not isinstance(x, TensorMeta)]
    return _dt.result_type_of(pairs, scalars)


def broadcast_shapes(*shapes):
    """Broadcast shapes with plain size arithmetic (a size that is not 1 wins); sizes that
    cannot broadcast raise torch's error.  The comparisons are what a symbolic size records
    as the program's assumptions (ember.export's guards)."""
    n = max((len(s) for s in shapes), default=0)
    out = [1] * n
    for s in shapes:
        for i, d in enumerate(s, n - len(s)):
            if not is_one(d):
                if not is_one(out[i]) and not sizes_equal(d, out[i]):
                    raise RuntimeError(
                        f"The size of tensor a ({out[i]}) must match the size of tensor b "
                        f"({d}) at non-singleton dimension {i}")
                out[i] = d
    return tuple(out)


def sizes_equal(a, b):
    """Whether sizes ``a`` and ``b`` may be equal (True for symbolic sizes that cannot say)."""
    r = a == b
    return not isinstance(r, (bool, np.bool_)) or bool(r)


def is_one(d):
    """Whether size ``d`` is known to be 1 (a symbolic size may not answer with a bool)."""
    r = d == 1
    return isinstance(r, (bool, np.bool_)) and bool(r)


def _shapes(xs):
    return [x.shape for x in xs if isinstance(x, TensorMeta)]


def same(x, *args, **params):
    """Output like input 0: same shape, same dtype."""
    return x.shape, x.dtype


def broadcast(*xs, **params):
    """Elementwise over broadcast inputs, torch promotion of all inputs."""
    return broadcast_shapes(*_shapes(xs)), promote(*xs)


def broadcast_float(*xs, **params):
    """Elementwise floating function: promoted dtype, integers and bool to the default float."""
    return broadcast_shapes(*_shapes(xs)), float_dtype(promote(*xs))


def broadcast_bool(*xs, **params):
    """Elementwise comparison or logical function: broadcast shape, bool."""
    return broadcast_shapes(*_shapes(xs)), _dt.bool


def unary_float(x, *args, **params):
    """Floating unary function: same shape, integers and bool to the default float."""
    return x.shape, float_dtype(x.dtype)


def unary_real(x, *args, **params):
    """Same shape, complex dtypes to their real counterpart (abs, real, ...)."""
    return x.shape, x.dtype.to_real()


def predicate(x, *args, **params):
    """Elementwise predicate (isnan, signbit, ...): same shape, bool."""
    return x.shape, _dt.bool


def wrap_dim(d, ndim):
    """Dimension ``d`` (negative counts from the end) as a non-negative index."""
    return d + ndim if d < 0 else d


def reduce_shape(shape, dims, keepdim=False):
    """``shape`` reduced over ``dims`` (None = all), keeping size-1 dims if ``keepdim``."""
    n = len(shape)
    if dims is None:
        dims = range(n)
    elif isinstance(dims, int):
        dims = (dims,)
    dims = {wrap_dim(d, n) for d in dims} if n else set()
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


_REDUCED_DTYPE = {
    "same": lambda d: d,
    "int64_acc": lambda d: _dt.int64 if d.category < 2 else d,   # sum, prod, cumsum
    "float": float_dtype,                                        # logsumexp
    "real": lambda d: float_dtype(d.to_real()),                  # var, std, norms
    "bool": lambda d: _dt.bool,
    "int64": lambda d: _dt.int64,                                # argmax, count_nonzero
}


def reduction(kind="same"):
    """Rule of a reduction over params ``dims``/``dim`` (None = all) with ``keepdim``; an
    explicit ``dtype`` param wins, else ``kind`` maps the input dtype (see _REDUCED_DTYPE)."""
    to = _REDUCED_DTYPE[kind]

    def rule(x, *args, dims=None, dim=None, keepdim=False, dtype=None, **params):
        d = dims if dims is not None else dim
        return reduce_shape(x.shape, d, keepdim), as_dtype(dtype) or to(x.dtype)
    rule.__name__ = rule.__qualname__ = f"reduction_{kind}"
    return rule


def numel(shape):
    n = 1
    for s in shape:
        n = n * s
    return n


def infer_view_shape(shape, total):
    """A view/reshape target ``shape`` with its one ``-1`` entry resolved from ``total``."""
    shape = tuple(shape)
    if not any(type(s) is int and s == -1 for s in shape):
        return shape
    known = numel(s for s in shape if not (type(s) is int and s == -1))
    return tuple(total // known if type(s) is int and s == -1 else s for s in shape)


def slice_len(size, start, stop, step=1):
    """Length of ``range(size)[start:stop:step]`` (exact for ints; for symbolic sizes it
    assumes in-range bounds)."""
    if type(size) is int or isinstance(size, np.integer):
        return len(range(*slice(start, stop, step).indices(int(size))))
    step = 1 if step is None else step
    start = 0 if start is None else (start + size if start < 0 else start)
    stop = size if stop is None else (stop + size if stop < 0 else stop)
    return (stop - start + step - 1) // step


def index_view_shape(shape, key):
    """Shape of a basic-index view: ``key`` has one entry per indexed dim, an int (drops it),
    None (a new dim of size 1) or a (start, stop, step) slice."""
    out = []
    i = 0
    for k in key:
        if k is None:
            out.append(1)
            continue
        if type(k) is tuple:
            out.append(slice_len(shape[i], *k))
        i += 1
    return tuple(out) + tuple(shape[i:])


# ---- running rules and the check ----------------------------------------------------------

def run_rule(op, args, params):
    """The rule's result for ``op`` on ``args`` (tensors or metas) as ((shape, dtype), ...)."""
    if op.shape is None:
        raise NotImplementedError(f"operator {op.name} has no shape rule")
    r = op.shape(*[meta_of(a) for a in args], **params)
    return (r,) if op.n_out == 1 else tuple(r)


def _real(out):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return tuple((tuple(o.shape), _dt.FROM_NP[o.dtype] if isinstance(o, np.ndarray) else o.dtype)
                 for o in outs)


def _agree(rule, real):
    if len(rule) != len(real):
        return False
    for (rs, rd), (s, d) in zip(rule, real):
        if rd is not d or len(tuple(rs)) != len(s) or any(a != b for a, b in zip(rs, s)):
            return False
    return True


class ShapeCheckMode(DispatchMode):
    """Runs each operator, then its shape rule on the inputs' metadata, and compares."""

    def __ember_dispatch__(self, op, args, kwargs):
        base = getattr(op, "base", None)
        metas = [meta_of(a) for a in args]
        if base is None:
            out = op(*args, **kwargs)
            self._check(op, metas, kwargs, out)
            return out
        if STATE.modes:  # another mode below transforms the arrays the kernel sees
            return op(*args, **kwargs)
        # in-place: the rule describes what the kernel computes before it is written back
        seen = []
        kernel = base.kernel

        def recording(xp, *a, **p):
            r = kernel(xp, *a, **p)
            seen.append(r if isinstance(r, (tuple, list)) else np.asanyarray(r))
            return r
        base.kernel = recording
        try:
            out = op(*args, **kwargs)
        finally:
            base.kernel = kernel
        if seen:
            self._check(base, metas, kwargs, seen[-1])
        return out

    @staticmethod
    def _check(op, metas, params, out):
        if op.shape is None:
            raise AssertionError(f"operator {op.name} has no shape rule")
        try:
            rule = op.shape(*metas, **params)
        except DataDependentShape:
            return
        except Exception as e:
            raise AssertionError(f"shape rule of {op.name} failed with {type(e).__name__}: {e} "
                                 f"(inputs {metas}, params {params})") from e
        rule = (rule,) if op.n_out == 1 else tuple(rule)
        real = _real(out)
        if not _agree(rule, real):
            raise AssertionError(f"shape rule of {op.name} gives {rule}, the kernel "
                                 f"{real} (inputs {metas}, params {params})")


_GLOBAL = []


def check_shapes(enabled=True):
    """Verify every operator's shape rule against its real outputs (a debugging aid).

    The checking mode sits at the bottom of the dispatch mode stack, so it sees the
    calls that reach kernels; returns whether checking was on before."""
    was = bool(_GLOBAL)
    if enabled and not was:
        m = ShapeCheckMode()
        _GLOBAL.append(m)
        STATE.modes.insert(0, m)
        STATE.intercept = True
    elif not enabled and was:
        m = _GLOBAL.pop()
        if m in STATE.modes:
            STATE.modes.remove(m)
        STATE.intercept = bool(STATE.modes)
    return was


if os.environ.get("EMBER_CHECK_SHAPES") == "1":
    check_shapes(True)
