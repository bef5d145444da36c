"""ONNX lowerings of the gather/scatter primitives, advanced indexing and the sorting externs.

Advanced indexing (``index``, ``index_put``) is lowered the way NumPy defines it: the
indexed dims are brought together (to the front when they are not adjacent, as NumPy puts
the broadcast index dims first), merged into one dim, and the index tensors combined into
one linear index over it, so a single ``Gather``/``ScatterND`` does the work.  Negative
indices are wrapped first; boolean masks become their ``NonZero`` coordinates.
"""
import numpy as np

from .._core import dtype as _dt
from ._builder import Value
from ._ops_elementwise import operand
from ._ops_tensor import ints
from ._registry import lowers

__all__ = []


def _same_shape(a, c):
    return len(a.shape) == len(c.shape) and all(
        str(getattr(x, "expr", x)) == str(getattr(y, "expr", y)) for x, y in zip(a.shape, c.shape))


def _src_like_index(b, src, idx, dtype):
    """``src`` cut (or a scalar broadcast) to the index's shape, as ScatterElements wants."""
    if not isinstance(src, Value):
        return b.op("Expand", [b.scalar(src, dtype), b.op("Shape", [idx])])
    s = b.cast(src, dtype)
    if _same_shape(src, idx):
        return s
    zeros = b.const(np.zeros(idx.ndim, dtype=np.int64))
    return b.op("Slice", [s, zeros, b.op("Shape", [idx])])


@lowers("gather")
def _gather(b, ctx, x, idx, dim):
    if x.ndim == 0:
        return b.op("Identity", [x])
    return b.op("GatherElements", [x, idx], axis=int(dim) % x.ndim)


_SCATTER_REDUCTION = {None: "none", "add": "add", "sum": "add", "multiply": "mul",
                      "prod": "mul", "amax": "max", "amin": "min"}


@lowers("scatter", "scatter_add")
def _scatter(b, ctx, x, idx, src, dim, reduce=None):
    if ctx.name == "scatter_add":
        reduce = "add"
    if x.ndim == 0:
        return None
    s = _src_like_index(b, src, idx, x.dtype)
    return b.op("ScatterElements", [x, idx, s], axis=int(dim) % x.ndim,
                reduction=_SCATTER_REDUCTION[reduce])


def _identity_of(reduce, dt):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dt.is_floating_point:
        return np.inf if reduce == "amin" else -np.inf
    if dt == _dt.bool:
        return reduce == "amin"
    info = np.iinfo(dt.np)
    return info.max if reduce == "amin" else info.min


@lowers("scatter_reduce")
def _scatter_reduce(b, ctx, x, idx, src, dim, reduce, include_self):
    if x.ndim == 0 or reduce not in ("sum", "prod", "amax", "amin", "mean"):
        return None
    axis = int(dim) % x.ndim
    s = _src_like_index(b, src, idx, x.dtype)
    base = x.name
    if not include_self:  # the slots written start from the reduction's identity
        fill = b.op("Expand", [b.scalar(_identity_of(reduce, x.dtype), x.dtype),
                               b.op("Shape", [idx])])
        base = b.op("ScatterElements", [base, idx, fill], axis=axis)
    total = b.op("ScatterElements", [base, idx, s], axis=axis,
                 reduction=_SCATTER_REDUCTION[reduce if reduce != "mean" else "sum"])
    if reduce != "mean":
        return total
    # the count of values in each slot (itself included or not); untouched slots count 1
    ones_x = b.op("Expand", [b.scalar(1, x.dtype), b.op("Shape", [x])])
    ones_i = b.op("Expand", [b.scalar(1, x.dtype), b.op("Shape", [idx])])
    cnt = ones_x
    if not include_self:
        cnt = b.op("ScatterElements", [cnt, idx, b.op("Expand", [b.scalar(0, x.dtype),
                                                                 b.op("Shape", [idx])])],
                   axis=axis)
    cnt = b.op("ScatterElements", [cnt, idx, ones_i], axis=axis, reduction="add")
    if x.dtype.is_floating_point:
        return b.op("Div", [total, cnt])
    return b.op("Div", [b.op("Sub", [total, b.op("Mod", [total, cnt], fmod=0)]), cnt])


# ---- advanced indexing ----------------------------------------------------------------------

def _index_tensors(b, x, indices):
    """Per input dim: None, or an int64 index tensor name (masks expanded, negatives wrapped);
    also the rank of the broadcast index."""
    per_dim, rank = [], 0
    for i in indices:
        if i is None:
            per_dim.append(None)
            continue
        if i.dtype == _dt.bool:
            nz = b.op("NonZero", [i])  # (mask.ndim, k): one coordinate row per masked dim
            for r in range(i.ndim):
                row = b.op("Gather", [nz, b.const(np.array(r, dtype=np.int64))], axis=0)
                per_dim.append(row)
            rank = max(rank, 1)
            continue
        per_dim.append(b.cast(i, _dt.int64))
        rank = max(rank, i.ndim)
    per_dim += [None] * (x.ndim - len(per_dim))
    out = []
    for d, i in enumerate(per_dim):
        if i is None:
            out.append(None)
            continue
        size = b.size0(x.shape[d])
        zero = b.const(np.array(0, dtype=np.int64))
        out.append(b.op("Where", [b.op("Less", [i, zero]), b.op("Add", [i, size]), i]))
    return out, rank


def _front(b, x, per_dim):
    """(x with the indexed dims first and merged, linear index, the permutation used,
    positions of the indexed dims, whether they were adjacent)."""
    pos = [d for d, i in enumerate(per_dim) if i is not None]
    rest = [d for d, i in enumerate(per_dim) if i is None]
    perm = pos + rest
    adjacent = pos == list(range(pos[0], pos[0] + len(pos)))
    xt = x.name if perm == list(range(x.ndim)) else b.op("Transpose", [x], perm=perm)
    merged_shape = [-1] + [x.shape[d] for d in rest]
    xr = b.op("Reshape", [xt, ints(b, merged_shape)])
    linear = None
    for k, d in enumerate(pos):
        term = per_dim[d]
        stride = 1
        for e in pos[k + 1:]:
            stride = stride * x.shape[e]
        if not (b.is_static(stride) and int(stride) == 1):
            term = b.op("Mul", [term, b.size0(stride)])
        linear = term if linear is None else b.op("Add", [linear, term])
    return xr, linear, perm, pos, adjacent


@lowers("index")
def _index(b, ctx, x, *indices):
    per_dim, rank = _index_tensors(b, x, indices)
    if all(i is None for i in per_dim):
        return b.op("Identity", [x])
    xr, linear, perm, pos, adjacent = _front(b, x, per_dim)
    g = b.op("Gather", [xr, linear], axis=0)  # broadcast index dims, then the rest
    if adjacent and pos[0] > 0:  # NumPy keeps adjacent index dims in place
        n_lead = pos[0]
        order = list(range(rank, rank + n_lead)) + list(range(rank)) + \
            list(range(rank + n_lead, rank + x.ndim - len(pos)))
        g = b.op("Transpose", [g], perm=order)
    return g


@lowers("index_put")
def _index_put(b, ctx, x, values, *indices, accumulate):
    per_dim, rank = _index_tensors(b, x, indices)
    if all(i is None for i in per_dim):
        return None
    xr, linear, perm, pos, adjacent = _front(b, x, per_dim)
    n_rest = x.ndim - len(pos)
    v = operand(b, values, x.dtype)
    # the values broadcast to the indexing result in torch's layout, then to the front layout
    front_shape = b.op("Concat", [b.op("Shape", [linear]),
                                  b.op("Shape", [xr], start=1)], axis=0)
    if adjacent and pos[0] > 0:
        n_lead = pos[0]
        sx = b.op("Shape", [xr], start=1)
        lead = b.op("Slice", [sx, ints(b, [0]), ints(b, [n_lead])])
        tail = b.op("Slice", [sx, ints(b, [n_lead]), ints(b, [n_rest])])
        torch_shape = b.op("Concat", [lead, b.op("Shape", [linear]), tail], axis=0)
        v = b.op("Expand", [v, torch_shape])
        order = list(range(n_lead, n_lead + rank)) + list(range(n_lead)) + \
            list(range(n_lead + rank, n_lead + rank + n_rest - n_lead))
        v = b.op("Transpose", [v], perm=order)
    else:
        v = b.op("Expand", [v, front_shape])
    idx = b.op("Unsqueeze", [linear, b.const(np.array([-1], dtype=np.int64))])
    out = b.op("ScatterND", [xr, idx, v], reduction="add" if accumulate else None)
    shape_front = [x.shape[d] for d in perm]
    out = b.op("Reshape", [out, ints(b, shape_front)])
    if perm != list(range(x.ndim)):
        inverse = [perm.index(d) for d in range(x.ndim)]
        out = b.op("Transpose", [out], perm=inverse)
    return out


# ---- sorting and searching (externs) --------------------------------------------------------

@lowers("sort")
def _sort(b, ctx, x, dim, descending=False):
    if x.ndim == 0:
        return b.op("Identity", [x]), b.const(np.array(0, dtype=np.int64))
    axis = int(dim) % x.ndim
    k = b.size1(x.shape[axis])
    vals, idx = b.op("TopK", [x, k], outputs=2, axis=axis, largest=int(bool(descending)),
                     sorted=1)
    return vals, idx


@lowers("topk")
def _topk(b, ctx, x, k, dim, largest=True):
    if x.ndim == 0:
        return b.op("Identity", [x]), b.const(np.array(0, dtype=np.int64))
    vals, idx = b.op("TopK", [x, b.size1(k)], outputs=2, axis=int(dim) % x.ndim,
                     largest=int(bool(largest)), sorted=1)
    return vals, idx


@lowers("nonzero")
def _nonzero(b, ctx, x):
    return b.op("Transpose", [b.op("NonZero", [x])], perm=[1, 0])


@lowers("searchsorted")
def _searchsorted(b, ctx, seq, values, sorter=None, side="left", out_int32=False):
    """The insertion index counts the sorted row's elements before the value: those < it
    (side 'left') or <= it ('right')."""
    s = seq.name if sorter is None else b.op("GatherElements", [seq, sorter], axis=-1)
    dt = ctx.out.dtype
    from .._core import meta as _meta
    from .._core.meta import TensorMeta
    cdt = _meta.promote(TensorMeta(seq.shape, seq.dtype),
                        TensorMeta(values.shape, values.dtype) if isinstance(values, Value)
                        else values)
    s = b.cast(s, cdt, seq.dtype)
    v = operand(b, values, cdt)
    last = b.const(np.array([-1], dtype=np.int64))
    v = b.op("Unsqueeze", [v, last])                                     # [..., m, 1]
    if seq.ndim > 1:
        s = b.op("Unsqueeze", [s, b.const(np.array([-2], dtype=np.int64))])  # [..., 1, n]
    before = b.op("Less" if side == "left" else "LessOrEqual", [s, v])
    count = b.op("ReduceSum", [b.cast(before, _dt.int64, _dt.bool), last], keepdims=0)
    return b.cast(count, dt, _dt.int64)
