"""Movement composites: views that are not primitive (diagonal, unfold, general basic
indexing), their backward scatters, and the copying shape ops (stack, roll, repeat, tril).

A view decomposed here becomes a gather with a constant index table; for a compiled graph,
whose buffers are functional, aliasing carries no meaning, so values are all that count.
"""
import numpy as np

from . import decomposes
from ._util import (cast, const, expand_as_shape, full, movedim, numel, prim, reshape,
                    slice_dim, unsqueeze)


@decomposes("clone")
def _clone(x, memory_format=None):
    return prim._to_copy(x, dtype=x.dtype.np)


@decomposes("copy")
def _copy(dst, src, non_blocking=False):
    if not hasattr(src, "dtype"):
        return full(dst.shape, src, dst.dtype)
    if src.dtype.is_complex and not dst.dtype.is_complex:
        src = prim.real(src)
    return cast(prim._to_copy(expand_as_shape(src, dst.shape), dtype=src.dtype.np), dst.dtype)


@decomposes("stack")
def _stack(*xs, dim):
    parts = [unsqueeze(x, dim) for x in xs]
    return prim.cat(*parts, dim=dim, sizes=tuple(1 for _ in parts))


@decomposes("roll")
def _roll(x, shifts, dims):
    if not dims:
        flat = reshape(x, (numel(x.shape),))
        return reshape(_roll(flat, (shifts[0],), (0,)), x.shape)
    out = x
    for s, d in zip(shifts, dims):
        n = out.shape[d]
        if n == 0:
            continue
        k = s % n
        if k == 0:
            continue
        out = prim.cat(slice_dim(out, d, n - k, n), slice_dim(out, d, 0, n - k), dim=d,
                       sizes=(k, n - k))
    return prim._to_copy(out, dtype=x.dtype.np) if out is x else out


@decomposes("repeat")
def _repeat(x, sizes):
    x = reshape(x, (1,) * (len(sizes) - x.ndim) + tuple(x.shape))
    # (s0, n0, s1, n1, ...) expanded from (1, n0, 1, n1, ...), then merged pairwise
    inter = []
    for n in x.shape:
        inter += [1, n]
    y = reshape(x, inter)
    target = []
    for s, n in zip(sizes, x.shape):
        target += [s, n]
    y = prim.expand(y, shape=tuple(target))
    return reshape(y, [s * n for s, n in zip(sizes, x.shape)])


@decomposes("repeat_interleave")
def _repeat_interleave(x, repeats, dim, flat):
    if flat:
        x = reshape(x, (numel(x.shape),))
    n = x.shape[dim]
    idx = const(np.repeat(np.arange(n), repeats), np.int64)
    return prim.index(x, *([None] * dim), idx)


def _tri_mask(shape, diagonal, upper):
    r, c = shape[-2], shape[-1]
    i = np.arange(r)[:, None]
    j = np.arange(c)[None, :]
    return const((j - i >= diagonal) if upper else (j - i <= diagonal))


@decomposes("tril")
def _tril(x, diagonal):
    return prim.where(_tri_mask(x.shape, diagonal, False), x, full((), 0, x.dtype))


@decomposes("triu")
def _triu(x, diagonal):
    return prim.where(_tri_mask(x.shape, diagonal, True), x, full((), 0, x.dtype))


# ---- diagonal / unfold and their adjoints --------------------------------------------------
def _diag_index(a, b, offset):
    n = max(min(a, b - offset) if offset >= 0 else min(a + offset, b), 0)
    rows = np.arange(n) + (0 if offset >= 0 else -offset)
    cols = np.arange(n) + (offset if offset >= 0 else 0)
    return const(rows, np.int64), const(cols, np.int64)


def _to_back(ndim, dim1, dim2):
    return [d for d in range(ndim) if d not in (dim1, dim2)] + [dim1, dim2]


@decomposes("diagonal")
def _diagonal(x, offset, dim1, dim2):
    order = _to_back(x.ndim, dim1, dim2)
    y = prim.permute(x, dims=tuple(order))
    rows, cols = _diag_index(x.shape[dim1], x.shape[dim2], offset)
    return prim.index(y, *([None] * (x.ndim - 2)), rows, cols)


@decomposes("_diagonal_backward")
def _diagonal_backward(g, shape, offset, dim1, dim2):
    order = _to_back(len(shape), dim1, dim2)
    zeros = full([shape[d] for d in order], 0, g.dtype)
    rows, cols = _diag_index(shape[dim1], shape[dim2], offset)
    y = prim.index_put(zeros, g, *([None] * (len(shape) - 2)), rows, cols, accumulate=False)
    inv = [order.index(d) for d in range(len(shape))]
    return prim.permute(y, dims=tuple(inv))


def _windows(n, size, step):
    count = (n - size) // step + 1
    return const(np.arange(count)[:, None] * step + np.arange(size)[None, :], np.int64)


@decomposes("unfold")
def _unfold(x, dim, size, step):
    if x.ndim == 0:
        return reshape(prim._to_copy(x, dtype=x.dtype.np), (1,)) if size else \
            full((0,), 0, x.dtype)
    y = prim.index(x, *([None] * dim), _windows(x.shape[dim], size, step))
    return movedim(y, dim + 1, -1)


@decomposes("_unfold_backward")
def _unfold_backward(g, shape, dim, size, step):
    if not shape:
        return reshape(prim.sum(g, dims=tuple(range(g.ndim)), keepdim=False), ())
    y = movedim(g, -1, dim + 1)
    zeros = full(shape, 0, g.dtype)
    return prim.index_put(zeros, y, *([None] * dim), _windows(shape[dim], size, step),
                          accumulate=True)


# ---- general basic indexing ----------------------------------------------------------------
def _plain_key(shape, key):
    """The key as one (start, stop, step) per indexed dim of the input, and the shape of
    the result (ints drop their dim, None inserts one)."""
    sl, out, d = [], [], 0
    for k in key:
        if k is None:
            out.append(1)
            continue
        n = shape[d]
        if type(k) is tuple:
            r = range(n)[slice(*k)]
            sl.append((r.start, r.stop, r.step) if len(r) else (0, 0, 1))
            out.append(len(r))
        else:
            i = k % n if n else k
            sl.append((i, i + 1, 1))
        d += 1
    out.extend(shape[d:])
    return tuple(sl), tuple(out)


@decomposes("_index_view")
def _index_view(x, key):
    sl, out = _plain_key(tuple(x.shape), key)
    y = prim.slice(x, key=sl) if sl else x
    return reshape(y, out)


@decomposes("split", "split_with_sizes")
def _split(x, sizes, dim):
    from ..shape import _split_keys
    return tuple(_index_view(x, k) for k in _split_keys(dim, sizes))


@decomposes("unbind")
def _unbind(x, dim):
    from ..shape import _unbind_keys
    return tuple(_index_view(x, k) for k in _unbind_keys(dim, x.shape[dim]))


def _region_index(shape, key):
    """Per-dim positions that a basic index key selects, as an open mesh (np.ix_)."""
    sl, _ = _plain_key(shape, key)
    axes = [np.arange(*s) for s in sl] + [np.arange(n) for n in shape[len(sl):]]
    return [const(a, np.int64) for a in np.ix_(*axes)] if axes else []


@decomposes("_index_view_backward")
def _index_view_backward(g, shape, key):
    sl, _ = _plain_key(tuple(shape), key)
    region = tuple(len(range(*s)) for s in sl) + tuple(shape[len(sl):])
    zeros = full(shape, 0, g.dtype)
    if not shape:
        return reshape(prim._to_copy(g, dtype=g.dtype.np), ())
    return prim.index_put(zeros, reshape(g, region), *_region_index(tuple(shape), key),
                          accumulate=False)


@decomposes("_view_scatter")
def _view_scatter(base, src, chain):
    # the positions of base that the view chain reaches, folded from the shapes alone
    table = np.arange(numel(base.shape), dtype=np.int64).reshape(tuple(base.shape))
    for op, params in chain:
        if op.name in ("real", "imag", "view_as_real", "view_as_complex", "view_dtype"):
            raise NotImplementedError(f"_view_scatter through {op.name}: a view that changes "
                                      f"the element type has no index decomposition")
        table = np.asarray(op.kernel(np, table, **params))
    region = tuple(table.shape)
    vals = cast(expand_as_shape(src, region), base.dtype)
    flat = reshape(base, (numel(base.shape),))
    out = prim.index_put(flat, reshape(vals, (numel(region),)),
                         const(table.reshape(-1), np.int64), accumulate=False)
    return reshape(out, base.shape)


@decomposes("cross")
def _cross(a, b, dim):
    def comp(t, i):
        return prim.index(t, *([None] * dim), const(np.array([i]), np.int64))
    a0, a1, a2 = (comp(a, i) for i in range(3))
    b0, b1, b2 = (comp(b, i) for i in range(3))
    parts = [prim.sub(prim.mul(a1, b2), prim.mul(a2, b1)),
             prim.sub(prim.mul(a2, b0), prim.mul(a0, b2)),
             prim.sub(prim.mul(a0, b1), prim.mul(a1, b0))]
    return prim.cat(*parts, dim=dim, sizes=(1, 1, 1))

