"""ONNX lowerings of the structural primitives: casts, reductions and scans, movement,
creation, matmul and the identity-like ops.

Sizes in params (reshape targets, slice bounds, fill shapes) may be symbolic: the builder
computes them in the graph (`Builder.shape_tensor`), so dynamic dims stay dynamic.
"""
import numpy as np

from .._core import dtype as _dt
from .._core.meta import as_dtype
from ._builder import Value
from ._ops_elementwise import operand
from ._registry import lowers

__all__ = []

_I64_MAX = np.iinfo(np.int64).max
_I64_MIN = np.iinfo(np.int64).min


def ints(b, values):
    """A 1-D int64 tensor of ``values`` (ints or symbolic sizes)."""
    return b.shape_tensor(tuple(values))


def _axes(dims, ndim):
    if dims is None:
        return list(range(ndim))
    if isinstance(dims, int):
        dims = (dims,)
    return [int(d) % max(ndim, 1) for d in dims]


# ---- casts and identities -------------------------------------------------------------------

@lowers("_to_copy")
def _to_copy(b, ctx, x, dtype):
    if x.dtype.is_complex:
        return None  # the converter reports complex tensors as unsupported
    return b.op("Cast", [x], to=_onnx_type(as_dtype(dtype)))


def _onnx_type(d):
    from ._builder import onnx_dtype
    return onnx_dtype(d)


@lowers("_to_device", "_stop_gradient", "alias", "clone", "detach", "contiguous",
        "lift_fresh_copy")
def _identity(b, ctx, x, *args, **params):
    return b.op("Identity", [x])


@lowers("conj", "real")
def _real_conj(b, ctx, x):
    # on real tensors these are the identity; complex ones never reach here (see _convert)
    return b.op("Identity", [x])


# ---- reductions and scans -------------------------------------------------------------------

_REDUCE = {"sum": "ReduceSum", "prod": "ReduceProd", "amax": "ReduceMax", "amin": "ReduceMin"}


def _reduce(b, kind, v, axes, keepdim):
    return b.op(kind, [v, b.const(np.array(axes, dtype=np.int64))], keepdims=int(bool(keepdim)))


@lowers("sum", "prod", "amax", "amin")
def _reduction(b, ctx, x, dims=None, keepdim=False, dtype=None):
    out = ctx.out.dtype
    if dims is not None and len(tuple(dims) if not isinstance(dims, int) else (dims,)) == 0:
        return b.cast(x, out)  # NumPy's axis=(): nothing is reduced
    axes = _axes(dims, x.ndim)
    if x.ndim == 0:
        return b.cast(x, out)
    work = out
    if out == _dt.bool or out.itemsize < 4 and not out.is_floating_point:
        work = _dt.int32  # ONNX reduces no bool, and few narrow integer types
    elif out in (_dt.float16, _dt.bfloat16):
        work = _dt.float32  # halves accumulate in float32, as the eager kernels do
    r = _reduce(b, _REDUCE[ctx.name], b.cast(x, work), axes, keepdim)
    return b.cast(r, out, work)


@lowers("any", "all")
def _any_all(b, ctx, x, dims=None, keepdim=False):
    truth = b.cast(b.cast(x, _dt.bool), _dt.int32, _dt.bool)
    if dims is not None and len(tuple(dims)) == 0 or x.ndim == 0:
        r = truth
    else:
        r = _reduce(b, "ReduceMax" if ctx.name == "any" else "ReduceMin", truth,
                    _axes(dims, x.ndim), keepdim)
    return b.cast(b.cast(r, _dt.bool, _dt.int32), ctx.out.dtype, _dt.bool)


@lowers("argmax", "argmin")
def _argmax(b, ctx, x, dim=None, keepdim=False):
    kind = "ArgMax" if ctx.name == "argmax" else "ArgMin"
    if dim is None:
        flat = b.op("Reshape", [x, b.const(np.array([-1], dtype=np.int64))])
        r = b.op(kind, [flat], axis=0, keepdims=0)
        if keepdim:
            r = b.op("Reshape", [r, b.const(np.ones(x.ndim, dtype=np.int64))])
        return r
    if x.ndim == 0:
        return b.const(np.array(0, dtype=np.int64))
    return b.op(kind, [x], axis=int(dim) % x.ndim, keepdims=int(bool(keepdim)))


@lowers("cumsum")
def _cumsum(b, ctx, x, dim, reverse=False, dtype=None):
    v = b.cast(x, ctx.out.dtype)
    if x.ndim == 0:
        return b.op("Identity", [v])
    axis = b.const(np.array(int(dim) % x.ndim, dtype=np.int64))
    return b.op("CumSum", [v, axis], reverse=int(bool(reverse)))


# ---- movement ---------------------------------------------------------------------------------

@lowers("view", "_reshape_copy", "reshape", "_unsafe_view")
def _reshape(b, ctx, x, shape):
    shape = tuple(shape)
    allowzero = 1 if any(b.is_static(d) and int(d) == 0 for d in shape) else None
    return b.op("Reshape", [x, ints(b, shape)], allowzero=allowzero)


@lowers("permute")
def _permute(b, ctx, x, dims):
    return b.op("Transpose", [x], perm=[int(d) % max(x.ndim, 1) for d in dims])


@lowers("expand")
def _expand(b, ctx, x, shape):
    # -1 keeps the input's size: Expand broadcasts both ways, so a 1 does the same
    shape = tuple(1 if b.is_static(d) and int(d) == -1 else d for d in shape)
    return b.op("Expand", [x, ints(b, shape)])


@lowers("slice", "select")
def _basic_index(b, ctx, x, key):
    """``key``: per input dim a (start, stop, step) slice or an int; None adds a dim."""
    starts, ends, axes, steps, picks, new_dims = [], [], [], [], [], []
    i = pos = 0  # i: the input dim, pos: the output dim
    for k in key:
        if k is None:
            new_dims.append(pos)
            pos += 1
            continue
        if type(k) is tuple:
            pos += 1
            start, stop, step = (tuple(k) + (None, None, None))[:3]
            step = 1 if step is None else step
            if not (start is None and stop is None and step == 1):
                if start is None:
                    start = 0 if step > 0 else -1
                if stop is None:
                    stop = _I64_MAX if step > 0 else _I64_MIN
                starts.append(start)
                ends.append(stop)
                axes.append(i)
                steps.append(step)
        else:
            picks.append((i, k))
        i += 1
    v = x.name
    if axes:
        v = b.op("Slice", [v, ints(b, starts), ints(b, ends), ints(b, axes), ints(b, steps)])
    for axis, idx in sorted(picks, reverse=True):  # the highest first: lower axes stay put
        v = b.op("Gather", [v, b.size0(idx)], axis=axis)
    if new_dims:
        v = b.op("Unsqueeze", [v, b.const(np.array(new_dims, dtype=np.int64))])
    if v == x.name:
        v = b.op("Identity", [v])
    return v


@lowers("cat")
def _cat(b, ctx, *xs, dim, sizes=None):
    nd = ctx.out.ndim if hasattr(ctx.out, "ndim") else len(ctx.out.shape)
    dt = ctx.out.dtype
    parts = [b.cast(x, dt) for x in xs if isinstance(x, Value) and
             not (x.ndim == 1 and b.is_static(x.shape[0]) and int(x.shape[0]) == 0 and nd != 1)]
    if not parts:
        return b.op("Identity", [b.cast(xs[0], dt)])
    return b.op("Concat", parts, axis=int(dim) % nd)


@lowers("stack")
def _stack(b, ctx, *xs, dim):
    nd = len(ctx.out.shape)
    axis = b.const(np.array([int(dim) % nd], dtype=np.int64))
    parts = [b.op("Unsqueeze", [b.cast(x, ctx.out.dtype), axis]) for x in xs]
    return b.op("Concat", parts, axis=int(dim) % nd)


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
              "circular": "wrap"}


@lowers("pad")
def _pad(b, ctx, x, pads, mode, value=0.0):
    """``pads``: ((dim, lo, hi), ...); negative widths crop (ONNX's Pad does too)."""
    lo, hi = [0] * x.ndim, [0] * x.ndim
    for d, a, c in pads:
        lo[d % x.ndim], hi[d % x.ndim] = a, c
    inputs = [x, ints(b, lo + hi)]
    if mode == "constant":
        inputs.append(b.scalar(value, x.dtype))
    if mode not in _PAD_MODES:
        return None
    return b.op("Pad", inputs, mode=_PAD_MODES[mode])


@lowers("flip")
def _flip(b, ctx, x, dims):
    if not dims:
        return b.op("Identity", [x])
    n = len(dims)
    return b.op("Slice", [x, ints(b, [-1] * n), ints(b, [_I64_MIN] * n),
                          ints(b, [int(d) % x.ndim for d in dims]), ints(b, [-1] * n)])


# ---- matmul -----------------------------------------------------------------------------------

@lowers("matmul", "mm", "bmm")
def _matmul(b, ctx, a, c):
    dt = ctx.out.dtype
    return b.op("MatMul", [b.cast(a, dt), b.cast(c, dt)])


# ---- creation ---------------------------------------------------------------------------------

@lowers("full")
def _full(b, ctx, *, shape, fill_value, dtype, device=None):
    dt = as_dtype(dtype)
    value = np.asarray(fill_value).astype(dt.np).reshape(1)
    from onnx import numpy_helper
    return b.op("ConstantOfShape", [ints(b, tuple(shape))],
                value=numpy_helper.from_array(value, "value"))


@lowers("arange")
def _arange(b, ctx, *, start, end, step, dtype, device=None):
    dt = as_dtype(dtype)
    if all(b.is_static(v) if isinstance(v, int) else True for v in (start, end, step)):
        n = len(np.arange(float(start), float(end), float(step)))
        if dt.is_floating_point:
            arr = (start + np.arange(n, dtype=np.float64) * step).astype(dt.np)
        else:
            arr = (int(start) + np.arange(n, dtype=np.int64) * int(step)).astype(dt.np)
        return b.const(arr)
    # symbolic bounds: computed in int64 (sizes are integers), then cast
    r = b.op("Range", [operand(b, start, _dt.int64), operand(b, end, _dt.int64),
                       operand(b, step, _dt.int64)])
    return b.cast(r, dt, _dt.int64)


@lowers("tensor")
def _tensor(b, ctx, *, data, dtype, device=None):
    return b.op("Identity", [b.const(np.array(data, dtype=as_dtype(dtype).np))])


# ---- scans with no ONNX operator: through an n x n triangle --------------------------------

def _triangle(b, x, axis, reverse):
    """(x with ``axis`` last and a new second-to-last dim: [..., 1, n], the bool [n, n]
    matrix keeping j <= i (j >= i reversed), the permutation used)."""
    perm = [d for d in range(x.ndim) if d != axis] + [axis]
    xt = x.name if axis == x.ndim - 1 else b.op("Transpose", [x], perm=perm)
    n = x.shape[axis]
    ones = b.op("ConstantOfShape", [ints(b, (n, n))], value=_int_value(1))
    keep = b.cast(b.op("Trilu", [ones], upper=int(bool(reverse))), _dt.bool, _dt.int64)
    return b.op("Unsqueeze", [xt, b.const(np.array([-2], dtype=np.int64))]), keep, perm


def _int_value(v):
    from onnx import numpy_helper
    return numpy_helper.from_array(np.array([v], dtype=np.int64), "value")


def _restore(b, v, perm):
    if perm == list(range(len(perm))):
        return v
    return b.op("Transpose", [v], perm=[perm.index(d) for d in range(len(perm))])


@lowers("cumprod")
def _cumprod(b, ctx, x, dim, reverse=False, dtype=None):
    dt = ctx.out.dtype
    v = b.cast(x, dt)
    if x.ndim == 0:
        return b.op("Identity", [v])
    from ._builder import Value
    axis = int(dim) % x.ndim
    row, keep, perm = _triangle(b, Value(v, x.shape, dt), axis, reverse)
    full = b.op("Where", [keep, row, b.scalar(1, dt)])  # [..., n(i), n(j)]
    r = b.op("ReduceProd", [full, b.const(np.array([-1], dtype=np.int64))], keepdims=0)
    return _restore(b, r, perm)


@lowers("cummax", "cummin")
def _cummax(b, ctx, x, dim):
    if x.ndim == 0:
        return b.op("Identity", [x]), b.const(np.array(0, dtype=np.int64))
    axis = int(dim) % x.ndim
    row, keep, perm = _triangle(b, x, axis, False)
    big = np.inf if x.dtype.is_floating_point else (
        True if x.dtype == _dt.bool else np.iinfo(x.dtype.np).max)
    work = _dt.int32 if x.dtype == _dt.bool else x.dtype
    row = b.cast(row, work, x.dtype)
    fill = b.scalar(-big if ctx.name == "cummax" else big, work)
    full = b.op("Where", [keep, row, fill])
    last = b.const(np.array([-1], dtype=np.int64))
    kind = "ReduceMax" if ctx.name == "cummax" else "ReduceMin"
    values = b.op(kind, [full, last], keepdims=1)                       # [..., n, 1]
    # the index: the last j <= i holding the running extreme (torch's tie rule)
    n = x.shape[axis]
    j = b.op("Range", [b.const(np.array(0, dtype=np.int64)), b.size0(n),
                       b.const(np.array(1, dtype=np.int64))])
    hit = b.op("And", [keep, b.op("Equal", [row, values])])
    idx = b.op("ReduceMax", [b.op("Where", [hit, j, b.const(np.array(-1, dtype=np.int64))]),
                             last], keepdims=0)
    values = b.op("Squeeze", [values, last])
    return _restore(b, b.cast(values, x.dtype, work), perm), _restore(b, idx, perm)


@lowers("linalg_det")
def _det(b, ctx, a):
    if not a.dtype.is_floating_point:
        return None
    return b.op("Det", [a])
