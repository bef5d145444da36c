"""Shape manipulation: cat/stack and friends, split/chunk/unbind (views), flip/roll/rot90,
repeat/tile/repeat_interleave, tril/triu, diag & trace, meshgrid, broadcasting helpers.

cat, stack, flip, roll, repeat, repeat_interleave and tril/triu are primitives
(one NumPy call each); split and unbind are multi-output views with one autograd node (see
"split / chunk / unbind"); the rest are composites of them and of the views in ``views.py``.
"""
import builtins
import functools
import itertools
import warnings

import numpy as np

from .._core import dtype as _dt
from .._core import meta as _meta
from .._core.ckernels import selection as _ck_sel
from .._core.dispatch import mark_multi_output_views, overridable
from .._core.state import STATE
from .._core.tensor import Size, _wrap_dim
from ._helpers import (NeedsOverride, Op, Tensor, apply, apply_inplace, bit_mask,
                       handle_override, host_tensor, promote_np, write_out, write_out_exact,
                       xp_fn)
from ._batching import _dims_rule
from ._batching_index import (_cat_rule, _repeat_interleave_rule, _repeat_rule, _roll_rule,
                              _stack_rule, _tri_rule)
from .indexing import INDEX_ADD
from .views import (_FULL, INDEX_VIEW_BACKWARD, SELECT, SLICE, _sizes, diag_embed, diagonal,
                    narrow, reshape, select, transpose, unsqueeze)

__all__ = ["cat", "concat", "concatenate", "stack", "hstack", "vstack", "row_stack", "dstack",
           "column_stack", "split", "tensor_split", "chunk", "unbind", "hsplit", "vsplit",
           "dsplit", "flip", "fliplr", "flipud", "roll", "rot90", "repeat_interleave", "tile",
           "tril", "triu", "diag", "diagflat", "trace", "meshgrid", "cartesian_prod",
           "combinations", "broadcast_tensors", "broadcast_shapes", "atleast_1d", "atleast_2d",
           "atleast_3d", "diff"]


def _is_integral(d):
    return not (d.is_floating_point or d.is_complex or d == _dt.bool)


def _tensor_list(name, tensors):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, "
                        f"not {type(tensors).__name__}")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            if getattr(type(t), "__ember_function__", None) is not None:
                raise NeedsOverride(t)
            raise TypeError(f"expected Tensor as element {i} in argument tensors, but got "
                            f"{type(t).__name__}")
    return tuple(tensors)


# ---- cat / stack ------------------------------------------------------------------------------
def _is_legacy_empty(shape):
    return len(shape) == 1 and shape[0] == 0


def _cat_kernel(xp, *xs, dim, sizes):
    dt = promote_np(*xs)
    parts = [x if x.dtype == dt else x.astype(dt) for x in xs if not _is_legacy_empty(x.shape)]
    if not parts:
        return xp.empty((0,), dtype=dt)
    return xp.concatenate(parts, axis=dim)


def _cat_vjp(ctx, g, *xs, dim, sizes):
    grads = []
    off = 0
    for i, n in enumerate(sizes):
        if n is None:  # a skipped legacy empty tensor
            grads.append(host_tensor(np.zeros((0,), dtype=g.dtype.np), g)
                         if ctx.needs_input_grad[i] else None)
            continue
        if ctx.needs_input_grad[i]:
            grads.append(narrow(g, dim, off, n))
        else:
            grads.append(None)
        off += n
    return tuple(grads)


def _cat_shape(*xs, dim, sizes):
    parts = [x for x, n in zip(xs, sizes) if n is not None]  # legacy 1-D empties are skipped
    if not parts:
        return (0,), _meta.promote(*xs)
    total = parts[0].shape[dim]
    for x in parts[1:]:
        total = total + x.shape[dim]
    s = parts[0].shape
    return s[:dim] + (total,) + s[dim + 1:], _meta.promote(*xs)


def _tangents_or_zeros(ts, xs):
    # the tangents of several inputs go through one op: zeros stand in for missing ones
    from .creation import zeros_like
    return tuple(zeros_like(x) if t is None else t for t, x in zip(ts, xs))


def _multi_linear_jvp(op):
    def jvp(out, ts, *xs, **params):
        return apply(op, _tangents_or_zeros(ts, xs), params)
    return jvp


CAT = Op("cat", _cat_kernel, _cat_vjp, save_inputs=False, shape=_cat_shape, batch=_cat_rule)
CAT.jvp = _multi_linear_jvp(CAT)


def _cat_params(tensors):
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    ref = None
    for i, t in enumerate(tensors):
        if t.dim() == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be "
                               f"concatenated")
        if ref is None and not _is_legacy_empty(t.shape):
            ref = i
    return ref


@overridable
def cat(tensors, dim=0, *, out=None):
    """Concatenates ``tensors`` along ``dim`` (1-D empty tensors are skipped, like torch)."""
    try:
        tensors = _tensor_list("cat", tensors)
    except NeedsOverride:
        return handle_override(cat, (tensors,), {"dim": dim})
    ref = _cat_params(tensors)
    if ref is None:
        d, sizes = 0, tuple(None for _ in tensors)
        _wrap_dim(dim, 1)
    else:
        rs = tensors[ref].shape
        d = _wrap_dim(dim, len(rs))
        sizes = []
        for i, t in enumerate(tensors):
            s = t.shape
            if _is_legacy_empty(s):
                sizes.append(None)
                continue
            if len(s) != len(rs):
                raise RuntimeError(f"Tensors must have same number of dimensions: got "
                                   f"{len(rs)} and {len(s)}")
            for k in range(len(rs)):
                if k != d and s[k] != rs[k]:
                    raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. "
                                       f"Expected size {rs[k]} but got size {s[k]} for tensor "
                                       f"number {i} in the list.")
            sizes.append(s[d])
        sizes = tuple(sizes)
    r = apply(CAT, tensors, {"dim": d, "sizes": sizes})
    if out is None:
        return r
    if isinstance(out, Tensor) and out.dtype.category < r.dtype.category:
        from .._core.dispatch import _cat_name
        raise TypeError(f"torch.cat(): input types can't be cast to the desired output type "
                        f"{_cat_name(out.dtype)}")
    return write_out(out, r, tensors, full=True)  # torch's cat refuses any overlap


concat = concatenate = cat


def _stack_kernel(xp, *xs, dim):
    dt = promote_np(*xs)
    return xp.stack([x if x.dtype == dt else x.astype(dt) for x in xs], axis=dim)


def _stack_vjp(ctx, g, *xs, dim):
    return tuple(select(g, dim, i) if need else None
                 for i, need in enumerate(ctx.needs_input_grad))


def _stack_shape(*xs, dim):
    s = xs[0].shape
    return s[:dim] + (len(xs),) + s[dim:], _meta.promote(*xs)


STACK = Op("stack", _stack_kernel, _stack_vjp, save_inputs=False, shape=_stack_shape,
           batch=_stack_rule)
STACK.jvp = _multi_linear_jvp(STACK)


@overridable
def stack(tensors, dim=0, *, out=None):
    """Stacks equally-shaped ``tensors`` along a new dimension ``dim``."""
    try:
        tensors = _tensor_list("stack", tensors)
    except NeedsOverride:
        return handle_override(stack, (tensors,), {"dim": dim})
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    s0 = tensors[0].shape
    for i, t in enumerate(tensors[1:], 1):
        if t.shape != s0:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(s0)} "
                               f"at entry 0 and {list(t.shape)} at entry {i}")
    d = _wrap_dim(dim, len(s0) + 1)
    r = apply(STACK, tensors, {"dim": d})
    return r if out is None else write_out(out, r, tensors, full=True)  # cat's checks


@overridable
def hstack(tensors, *, out=None):
    """Stacks tensors horizontally (along dim 1, or dim 0 for 1-D tensors)."""
    ts = atleast_1d(*_tensor_list("hstack", tensors))
    ts = ts if isinstance(ts, tuple) else (ts,)
    return cat(ts, 0 if ts and ts[0].dim() == 1 else 1, out=out)


@overridable
def vstack(tensors, *, out=None):
    """Stacks tensors vertically (row-wise, along dim 0 after ``atleast_2d``)."""
    ts = atleast_2d(*_tensor_list("vstack", tensors))
    return cat(ts if isinstance(ts, tuple) else (ts,), 0, out=out)


row_stack = vstack


@overridable
def dstack(tensors, *, out=None):
    """Stacks tensors depth-wise (along dim 2 after ``atleast_3d``)."""
    ts = atleast_3d(*_tensor_list("dstack", tensors))
    return cat(ts if isinstance(ts, tuple) else (ts,), 2, out=out)


@overridable
def column_stack(tensors, *, out=None):
    """Stacks 0-D/1-D tensors as columns (and 2-D tensors as they are) along dim 1."""
    ts = tuple(t.reshape((-1, 1)) if t.dim() <= 1 else t
               for t in _tensor_list("column_stack", tensors))
    return cat(ts, 1, out=out)


# ---- split / chunk / unbind (views) -------------------------------------------------------------
def _split_sizes(input, split_size_or_sections, dim):
    shp = input.shape
    if not shp:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = _wrap_dim(dim, len(shp))
    n = shp[d]
    if isinstance(split_size_or_sections, (int, np.integer)) or \
            (isinstance(split_size_or_sections, Tensor) and split_size_or_sections.ndim == 0):
        size = int(split_size_or_sections)
        if size < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got "
                               f"split_size={size}")
        if size == 0:
            if n != 0:
                raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got "
                                   f"dimension size of {n}")
            return d, [0]
        k = builtins.max((n + size - 1) // size, 1)
        return d, [size] * (k - 1) + [n - size * (k - 1)]
    sizes = [int(s) for s in split_size_or_sections]
    if builtins.sum(sizes) != n or any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input "
                           f"tensor's size at dimension {d}), but got split_sizes={sizes}")
    return d, sizes


def _pieces(input, d, sizes):
    out = []
    off = 0
    for s in sizes:
        out.append(narrow(input, d, off, s))
        off += s
    return tuple(out)


# Eager, with no dispatch mode active, a split is one multi-output view op: one autograd node
# (torch's SplitBackward0 / SplitWithSizesBackward0 / UnbindBackward0) whose backward writes
# the pieces' gradients into one tensor (cat/stack, zeros only for pieces that received
# none), where one slice node per piece would each fill an input-sized zero tensor for the
# engine to add up.  Under a mode (capture, vmap, forward AD, ...) the pieces are the
# narrow/select views that modes and graphs know (the composite the op's decomposition
# spells): a view remembers one single-output view op per step of its chain, so the eager
# pieces get theirs, the slice or select that makes each, from `_piece_views`.
def _split_keys(dim, sizes):
    lead, keys, off = (_FULL,) * dim, [], 0
    for s in sizes:
        keys.append(lead + ((off, off + s, 1),))
        off += s
    return keys


def _unbind_keys(dim, n):
    lead = (_FULL,) * dim
    return [lead + (i,) for i in range(n)]


def _split_kernel(xp, x, sizes, dim):
    # the arrays `_split_keys` select (spelled as NumPy indices here: this runs per call)
    lead, out, off = (slice(None),) * dim, [], 0
    for s in sizes:
        out.append(x[lead + (slice(off, off + s),)])
        off += s
    return out


def _unbind_kernel(xp, x, dim):
    lead = (slice(None),) * dim
    return [x[lead + (i, Ellipsis)] for i in range(x.shape[dim])]  # 0-d pieces stay views


def _split_shape(x, sizes, dim):
    s = x.shape
    return tuple((s[:dim] + (n,) + s[dim + 1:], x.dtype) for n in sizes)


def _unbind_shape(x, dim):
    s = x.shape
    return tuple((s[:dim] + s[dim + 1:], x.dtype) for _ in range(s[dim]))


def _one_piece_grad(grads, keys, shape):
    """With one piece's gradient received (of several), the input's gradient is that piece
    written into zeros (one input-sized fill, as torch's slice backward): cheaper than
    joining it with zero pieces.  None when more than one arrived."""
    got = [i for i, g in enumerate(grads) if g is not None]
    if len(got) != 1:
        return None
    i = got[0]
    return apply(INDEX_VIEW_BACKWARD, (grads[i],), {"shape": shape, "key": keys()[i]})


def _present_or_zeros(grads, shapes):
    """The pieces' gradients, zeros (of a received gradient's dtype and device) standing in
    for those that received none (the engine passes None for them)."""
    g0 = next(g for g in grads if g is not None)
    return [g0.new_zeros(s) if g is None else g for g, s in zip(grads, shapes)]


def _split_vjp(ctx, grads, x, sizes, dim):
    if type(grads) is not tuple:  # one piece (a node of one output gets its gradient bare)
        return grads
    shape = ctx.in_meta[0][0]
    one = _one_piece_grad(grads, lambda: _split_keys(dim, sizes), shape)
    if one is not None:
        return one
    parts = _present_or_zeros(grads, [shape[:dim] + (n,) + shape[dim + 1:] for n in sizes])
    # cat's sizes name a 1-D empty piece None (cat skips those, as torch's cat does)
    legacy = len(shape) == 1
    return apply(CAT, parts, {"dim": dim,
                              "sizes": tuple(None if legacy and n == 0 else n for n in sizes)})


def _unbind_vjp(ctx, grads, x, dim):
    if type(grads) is not tuple:
        grads = (grads,)
    shape = ctx.in_meta[0][0]
    one = _one_piece_grad(grads, lambda: _unbind_keys(dim, len(grads)), shape)
    if one is not None:
        return one
    return apply(STACK, _present_or_zeros(grads, [shape[:dim] + shape[dim + 1:]] * len(grads)),
                 {"dim": dim})


def _pieces_jvp(op):
    def jvp(out, ts, x, **params):
        return None if ts[0] is None else tuple(apply(op, (ts[0],), params))
    return jvp


def _split_op(name):
    op = Op(name, _split_kernel, _split_vjp, save_inputs=False, n_out=None, view=True,
            shape=_split_shape, batch=_dims_rule)
    op.jvp = _pieces_jvp(op)
    return op


SPLIT = _split_op("split")                        # by one size: SplitBackward0
SPLIT_WITH_SIZES = _split_op("split_with_sizes")  # by a list of sizes: SplitWithSizesBackward0
UNBIND = Op("unbind", _unbind_kernel, _unbind_vjp, save_inputs=False, n_out=None, view=True,
            shape=_unbind_shape, batch=_dims_rule)
UNBIND.jvp = _pieces_jvp(UNBIND)


def _piece_views(input, op, params, keys, name):
    """The pieces of ``input`` by ``op`` (`SPLIT`, `SPLIT_WITH_SIZES` or `UNBIND`), the
    views ``keys`` select, marked as one function's multiple views (``name``, torch's)."""
    view = SELECT if op is UNBIND else SLICE
    # a mode sees the composite (see above); so do meta tensors, whose view strides come
    # from each single view's rule
    if STATE.intercept or (type(input._data) is not np.ndarray and input.is_meta):
        return mark_multi_output_views(tuple(apply(view, (input,), {"key": k}) for k in keys),
                                       name)
    outs = tuple(apply(op, (input,), params))
    for o, k in zip(outs, keys):
        if o._base is not None:  # the chain's last step becomes the one view that makes o
            o._view_chain = o._view_chain[:-1] + ((view, {"key": k}),)
    return mark_multi_output_views(outs, name)


def _split_by(input, d, sizes, op):
    params = {"sizes": tuple(sizes), "dim": d}
    return _piece_views(input, op, params, _split_keys(d, sizes),
                        "Split" if op is SPLIT else "SplitWithSizes")


@overridable
def split(tensor, split_size_or_sections, dim=0):
    """Splits ``tensor`` into views of ``split_size`` along ``dim`` (or of the given sizes)."""
    d, sizes = _split_sizes(tensor, split_size_or_sections, dim)
    by_size = isinstance(split_size_or_sections, (int, np.integer, Tensor))
    return _split_by(tensor, d, sizes, SPLIT if by_size else SPLIT_WITH_SIZES)


@overridable
def tensor_split(input, indices_or_sections, dim=0):
    """Splits ``input`` into views: ``n`` near-equal sections, or at the given indices."""
    shp = input.shape
    if not shp:
        raise RuntimeError(f"tensor_split expected at least a 1-dimensional tensor, but got a "
                           f"tensor with 0 dims")
    d = _wrap_dim(dim, len(shp))
    n = shp[d]
    ios = indices_or_sections
    if isinstance(ios, Tensor):
        if not _is_integral(ios.dtype) or ios.dim() > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a "
                               "zero-dimensional or one-dimensional tensor, but got a tensor "
                               f"with {ios.dim()} dims")
        ios = int(ios) if ios.dim() == 0 else ios.tolist()
    # torch's tensor_split is slices, a node each, and its pieces may be written in place
    if isinstance(ios, (int, np.integer)):
        k = int(ios)
        if k <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {k}")
        q, r = divmod(n, k)
        sizes = [q + 1] * r + [q] * (k - r)
        return _pieces(input, d, sizes)
    bounds = [0] + [builtins.min(builtins.max(int(i) if i >= 0 else int(i) + n, 0), n)
                    for i in ios] + [n]
    out = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        a = builtins.min(a, n)
        out.append(narrow(input, d, a, builtins.max(b - a, 0)))
    return tuple(out)


def _dir_split(name, input, ios, dim, need):
    if input.dim() < need:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {need} dimension, but "
                           f"got a tensor with {input.dim()} dimensions!")
    if isinstance(ios, int) and ios and input.shape[dim] % ios:
        raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the "
                           f"size of the dimension {input.shape[dim]} is not divisible by "
                           f"the split_size {ios}!")
    return tensor_split(input, ios, dim)


@overridable
def hsplit(input, indices_or_sections):
    """Splits ``input`` horizontally (dim 1, or dim 0 for 1-D tensors)."""
    return _dir_split("hsplit", input, indices_or_sections, 1 if input.dim() > 1 else 0, 1)


@overridable
def vsplit(input, indices_or_sections):
    """Splits ``input`` vertically (dim 0)."""
    return _dir_split("vsplit", input, indices_or_sections, 0, 2)


@overridable
def dsplit(input, indices_or_sections):
    """Splits ``input`` depth-wise (dim 2)."""
    return _dir_split("dsplit", input, indices_or_sections, 2, 3)


@overridable
def chunk(input, chunks, dim=0):
    """Splits ``input`` into at most ``chunks`` views along ``dim``."""
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    shp = input.shape
    if not shp:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    d = _wrap_dim(dim, len(shp))
    n = shp[d]
    size = (n + chunks - 1) // chunks
    if size == 0:  # an empty dim: ``chunks`` empty pieces, as torch's split_with_sizes
        return _split_by(input, d, [0] * chunks, SPLIT_WITH_SIZES)
    return split(input, size, d)


@overridable
def unbind(input, dim=0):
    """Removes dimension ``dim``: a tuple of the slices (views) along it."""
    shp = input.shape
    if not shp:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = _wrap_dim(dim, len(shp))
    if not shp[d]:
        return ()
    return _piece_views(input, UNBIND, {"dim": d}, _unbind_keys(d, shp[d]), "Unbind")


def _split_method(self, split_size, dim=0):
    """``Tensor.split``: torch names the size argument ``split_size`` on the method."""
    return split(self, split_size, dim)


Tensor.split = _split_method
Tensor.tensor_split = tensor_split
Tensor.hsplit = hsplit
Tensor.vsplit = vsplit
Tensor.dsplit = dsplit
Tensor.chunk = chunk
Tensor.unbind = unbind


# ---- flip / roll / rot90 ----------------------------------------------------------------------
def _dims_list(dims, ndim):
    dims = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
    out = tuple(_wrap_dim(int(d), ndim) for d in dims)
    for d in out:
        if out.count(d) > 1:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return out


def _flip_kernel(xp, x, dims):
    if not dims:
        return x.copy()
    if x.ndim - 1 in dims:  # the last dimension reversed by a C loop (NumPy's is strided)
        y = _ck_sel.flip_last(x)
        if y is not None:
            rest = tuple(d for d in dims if d != x.ndim - 1)
            return xp.flip(y, rest).copy() if rest else y
    return xp.flip(x, dims).copy()


FLIP = Op("flip", _flip_kernel,
          lambda ctx, g, x, dims: apply(FLIP, (g,), {"dims": dims}), save_inputs=False,
          shape=lambda x, dims: (x.shape, x.dtype), batch=_dims_rule)


@overridable
def flip(input, dims):
    """Reverses the order of ``input`` along the given dims (a copy)."""
    try:
        d = _dims_list(dims, input.dim())
    except AttributeError:
        return handle_override(flip, (input, dims), {})
    return apply(FLIP, (input,), {"dims": d})


@overridable
def fliplr(input):
    """Flips ``input`` left/right (dim 1)."""
    if input.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


@overridable
def flipud(input):
    """Flips ``input`` up/down (dim 0)."""
    if input.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


def _roll_kernel(xp, x, shifts, dims):
    if not dims:
        return xp.roll(x.reshape(-1), shifts[0]).reshape(x.shape)
    return xp.roll(x, shifts, axis=dims)


ROLL = Op("roll", _roll_kernel,
          lambda ctx, g, x, shifts, dims: apply(ROLL, (g,), {"shifts": tuple(-s for s in shifts),
                                                             "dims": dims}),
          save_inputs=False, shape=lambda x, **p: (x.shape, x.dtype), batch=_roll_rule)


@overridable
def roll(input, shifts, dims=None):
    """Rolls ``input`` by ``shifts`` along ``dims`` (the flattened tensor if None)."""
    shifts = (shifts,) if isinstance(shifts, (int, np.integer)) else tuple(shifts)
    shifts = tuple(int(s) for s in shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                               f"dims:0")
        return apply(ROLL, (input,), {"shifts": shifts, "dims": ()})
    dims = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:"
                           f"{len(dims)}")
    dims = tuple(_wrap_dim(int(d), input.dim()) for d in dims)
    return apply(ROLL, (input,), {"shifts": shifts, "dims": dims})


@overridable
def rot90(input, k=1, dims=(0, 1)):
    """Rotates ``input`` by 90 degrees ``k`` times in the plane of ``dims``."""
    dims = tuple(dims)
    n = input.dim()
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if n < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {n}")
    d0, d1 = _wrap_dim(dims[0], n), _wrap_dim(dims[1], n)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} "
                           f"and dim1 = {dims[1]}")
    k %= 4
    if k == 1:
        return transpose(flip(input, (d1,)), d0, d1)
    if k == 2:
        return flip(input, (d0, d1))
    if k == 3:
        return flip(transpose(input, d0, d1), (d1,))
    return input.clone()


Tensor.flip = flip
Tensor.fliplr = fliplr
Tensor.flipud = flipud
Tensor.roll = roll
Tensor.rot90 = rot90


# ---- repeat / tile / repeat_interleave -----------------------------------------------------------
def _repeat_kernel(xp, x, sizes):
    x = x.reshape((1,) * (len(sizes) - x.ndim) + x.shape)
    return xp.tile(x, sizes)


def _repeat_vjp(ctx, g, x, sizes):
    shape = ctx.in_meta[0][0]
    padded = (1,) * (len(sizes) - len(shape)) + tuple(shape)
    inter = []
    for r, s in zip(sizes, padded):
        inter += [r, s]
    g = g.reshape(tuple(inter))
    return g.sum(tuple(range(0, 2 * len(sizes), 2))).reshape(tuple(shape)) if sizes else g


def _repeat_shape(x, sizes):
    padded = (1,) * (len(sizes) - len(x.shape)) + x.shape
    return tuple(s * r for s, r in zip(padded, sizes)), x.dtype


REPEAT = Op("repeat", _repeat_kernel, _repeat_vjp, save_inputs=False, shape=_repeat_shape,
            batch=_repeat_rule)


def _repeat(self, *sizes):
    """Repeats ``self`` ``sizes[i]`` times along each dimension (like ``np.tile``)."""
    sizes = _sizes(sizes)
    if len(sizes) < self.dim():
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(sizes)}: "
                           f"{list(sizes)}")
    return apply(REPEAT, (self,), {"sizes": sizes})


@overridable
def tile(input, dims):
    """Repeats ``input`` along each dimension; missing leading ``dims`` count as 1."""
    dims = _sizes((dims,))
    dims = (1,) * (input.dim() - len(dims)) + dims
    return _repeat(input, *dims)


def _ri_vjp(ctx, g, x, repeats, dim, flat):
    shape = ctx.in_meta[0][0]
    n = int(np.prod(shape)) if flat else shape[dim]
    idx = host_tensor(np.repeat(np.arange(n, dtype=np.int64), repeats), g)
    base = host_tensor(np.zeros((n,) if flat else shape, dtype=g.dtype.np), g)
    r = apply(INDEX_ADD, (base, idx, g), {"dim": dim})
    return r.reshape(shape) if flat else r


def _ri_shape(x, repeats, dim, flat):
    s = (_meta.numel(x.shape),) if flat else x.shape
    n = s[dim] * repeats if isinstance(repeats, int) else sum(repeats)
    return s[:dim] + (n,) + s[dim + 1:], x.dtype


REPEAT_INTERLEAVE = Op("repeat_interleave",
                       lambda xp, x, repeats, dim, flat: xp.repeat(
                           x.reshape(-1) if flat else x, repeats, axis=dim),
                       _ri_vjp, save_inputs=False, shape=_ri_shape, batch=_repeat_interleave_rule)


@overridable
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Repeats each element of ``input`` ``repeats`` times (an int or a tensor of counts),
    along ``dim`` (the flattened input if None)."""
    if repeats is None:  # repeat_interleave(repeats): indices repeated by their counts
        reps = input
        if reps.dim() > 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        from .creation import arange
        return repeat_interleave(arange(reps.shape[0] if reps.dim() else 1), reps,
                                 0, output_size=output_size)
    flat = dim is None
    d = 0 if flat else _wrap_dim(dim, input.dim())
    n = input.numel() if flat else (input.shape[d] if input.dim() else 1)
    if isinstance(repeats, Tensor):
        if repeats.dim() > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        if not _is_integral(repeats.dtype):
            raise RuntimeError(f"repeat_interleave only supports Int or Long tensors as repeats")
        if repeats.is_meta:  # the counts are values: only output_size gives the shape
            if output_size is None:
                raise RuntimeError("cannot repeat_interleave a meta tensor without output_size")
            # an index of that length: the gather is differentiable, as torch's result is
            src = input.reshape(-1) if flat else input if input.dim() else input.reshape((1,))
            return src.index_select(0 if flat else d, repeats.new_empty(output_size))
        r = repeats._data.reshape(-1)
        if r.size == 1 and n != 1:
            r = int(r[0])
        elif r.size != n:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {r.size} and input.size({d}) = {n}")
        else:
            r = tuple(int(v) for v in r)
    else:
        r = int(repeats)
    if (min(r) if isinstance(r, tuple) and r else r if isinstance(r, int) else 0) < 0:
        raise RuntimeError("repeats can not be negative")
    x = input if input.dim() or flat else input.reshape((1,))
    out = apply(REPEAT_INTERLEAVE, (x,), {"repeats": r, "dim": d, "flat": flat})
    if output_size is not None and out.shape[d] != output_size:
        raise RuntimeError(f"allocated size does not match required size")
    return out


Tensor.repeat = _repeat
Tensor.tile = tile
Tensor.repeat_interleave = repeat_interleave


# ---- tril / triu ------------------------------------------------------------------------------
@functools.lru_cache(maxsize=8)
def _tri_bits(m, n, k, lower, itemsize):
    """All-ones words where tril (``lower``) or triu keeps an element of an (m, n) matrix,
    zero words elsewhere (read-only, cached: causal masks repeat)."""
    keep = np.tri(m, n, k, dtype=np.int8) if lower else 1 - np.tri(m, n, k - 1, dtype=np.int8)
    r = bit_mask(keep, itemsize)
    r.flags.writeable = False
    return r


def _tri_kernel(fn, lower):
    """np.tril/np.triu select with a branching where (~1 ns an element); an AND of each
    element's bits with a cached mask is the same selection (the rest +0, every NaN kept)."""
    def kernel(xp, x, diagonal):
        m, n = x.shape[-2:]
        if (xp is not np or x.dtype.itemsize not in (1, 2, 4, 8) or x.dtype.kind == "O"
                or m * n > 1 << 20 or x.size == 0):
            return xp_fn(xp, fn)(x, diagonal)
        u = np.dtype(f"u{x.dtype.itemsize}")
        return np.bitwise_and(x.view(u), _tri_bits(m, n, diagonal, lower, x.dtype.itemsize)
                              ).view(x.dtype)
    return kernel


def _tri(name, fn):
    op = Op(name, _tri_kernel(fn, name == "tril"),
            lambda ctx, g, x, diagonal: apply(op, (g,), {"diagonal": diagonal}),
            save_inputs=False, shape=lambda x, diagonal: (x.shape, x.dtype), batch=_tri_rule)

    def check(input):
        if input.dim() < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")

    def public(input, diagonal=0, *, out=None):
        check(input)
        r = apply(op, (input,), {"diagonal": int(diagonal)})
        return r if out is None else write_out_exact(out, r)

    def inplace(self, diagonal=0):
        check(self)
        return apply_inplace(op, self, (), {"diagonal": int(diagonal)})
    public.__name__ = name
    public.__doc__ = f"The {'lower' if name == 'tril' else 'upper'} triangular part of the " \
                     f"matrices in ``input`` (the other elements set to 0)."
    setattr(Tensor, name, public)
    setattr(Tensor, name + "_", inplace)
    return overridable(public)


tril = _tri("tril", np.tril)
triu = _tri("triu", np.triu)


# ---- diag / trace ------------------------------------------------------------------------------
@overridable
def diag(input, diagonal=0, *, out=None):
    """A 1-D input becomes the ``diagonal``-th diagonal of a square matrix; a 2-D input gives
    that diagonal as a 1-D tensor."""
    n = input.dim()
    if n == 1:
        r = diag_embed(input, diagonal, 0, 1)
    elif n == 2:
        r = diagonal_copy(input, diagonal)
    else:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {n}D")
    return r if out is None else write_out_exact(out, r)


def diagonal_copy(input, offset=0, dim1=0, dim2=1):
    return diagonal(input, offset, dim1, dim2).clone()


@overridable
def diagflat(input, offset=0):
    """A 2-D tensor with the flattened ``input`` as its ``offset``-th diagonal."""
    return diag_embed(input.reshape((-1,)), offset, 0, 1)


@overridable
def trace(input):
    """The sum of the main diagonal of a 2-D tensor."""
    if input.dtype == _dt.bool:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim "
                           f"{input.dim()}")
    return diagonal(input).sum()


Tensor.diag = diag
Tensor.diagflat = diagflat
Tensor.trace = trace


# ---- meshgrid / cartesian_prod / combinations ----------------------------------------------------
@overridable
def meshgrid(*tensors, indexing=None):
    """Coordinate grids (expanded views) of 1-D ``tensors``, with 'ij' or 'xy' indexing."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ValueError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                         f"received: {indexing}")
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got: {t}")
        if t.dtype != tensors[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    sizes = [t.numel() for t in tensors]
    pos = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) >= 2:
        pos[0], pos[1] = 1, 0
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for t, p in zip(tensors, pos):
        shape = [1] * len(tensors)
        shape[p] = -1
        out.append(t.reshape(tuple(shape)).expand(*sizes))
    return tuple(out)


@overridable
def cartesian_prod(*tensors):
    """The cartesian product of 1-D tensors, as rows of a 2-D tensor."""
    for t in tensors:
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape((-1,)) for g in grids], 1)


@overridable
def combinations(input, r=2, with_replacement=False):
    """All length-``r`` combinations of the elements of the 1-D ``input``, as rows."""
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return host_tensor(np.empty((0,), dtype=input.dtype.np), input)
    gen = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    idx = np.array(list(gen(range(input.shape[0]), r)), dtype=np.int64).reshape(-1, r)
    from .indexing import INDEX_SELECT
    cols = [apply(INDEX_SELECT, (input, host_tensor(np.ascontiguousarray(idx[:, j]), input)),
                  {"dim": 0})
            for j in range(r)]
    return stack(cols, 1)


# ---- broadcasting helpers / atleast_nd ----------------------------------------------------------
@overridable
def broadcast_shapes(*shapes):
    """The shape that all ``shapes`` broadcast to."""
    shapes = [(s,) if isinstance(s, (int, np.integer)) else tuple(s) for s in shapes]
    for s in shapes:
        if any(int(v) < 0 for v in s):
            raise RuntimeError(f"Trying to create tensor with negative dimension {min(s)}: "
                               f"{list(s)}")
    try:
        return Size(np.broadcast_shapes(*shapes))
    except ValueError:
        raise RuntimeError("Shape mismatch: objects cannot be broadcast to a single "
                           "shape.") from None


@overridable
def broadcast_tensors(*tensors):
    """Expands ``tensors`` (views) to their common broadcast shape."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    try:
        shape = np.broadcast_shapes(*[t.shape for t in tensors])
    except ValueError:
        a, b = tensors[0].shape, tensors[-1].shape
        raise RuntimeError(f"The size of tensor a ({a[-1] if a else 1}) must match the size of "
                           f"tensor b ({b[-1] if b else 1}) at non-singleton dimension") from None
    return tuple(t.expand(shape) for t in tensors)


def _atleast(n, tensors):
    single = len(tensors) == 1 and isinstance(tensors[0], Tensor)
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    out = []
    for t in tensors:
        s = t.shape
        if len(s) >= n:
            out.append(t)
        elif n == 3 and len(s) == 1:
            out.append(reshape(t, (1, s[0], 1)))
        elif n == 3 and len(s) == 2:
            out.append(unsqueeze(t, 2))
        else:
            out.append(reshape(t, (1,) * (n - len(s)) + s))
    return out[0] if single else tuple(out)


@overridable
def atleast_1d(*tensors):
    """Views of the inputs with at least one dimension."""
    return _atleast(1, tensors)


@overridable
def atleast_2d(*tensors):
    """Views of the inputs with at least two dimensions."""
    return _atleast(2, tensors)


@overridable
def atleast_3d(*tensors):
    """Views of the inputs with at least three dimensions."""
    return _atleast(3, tensors)




@overridable
def diff(input, n=1, dim=-1, prepend=None, append=None):
    """Computes the n-th forward difference along the given dimension."""
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    parts = [t for t in (prepend, input, append) if t is not None]
    x = cat(parts, dim) if len(parts) > 1 else input
    for _ in builtins.range(n):
        length = x.shape[dim]
        if length == 0:
            break
        hi, lo = x.narrow(dim, 1, length - 1), x.narrow(dim, 0, length - 1)
        x = hi != lo if x.dtype.name == "bool" else hi - lo
    return x


Tensor.diff = lambda self, n=1, dim=-1, prepend=None, append=None: diff(self, n, dim, prepend,
                                                                       append)


# no jvp rules written: forward AD derives these tangents from the vjps
from .._core.op import JVP_FROM_VJP, mark_unsupported  # noqa: E402

mark_unsupported("jvp", JVP_FROM_VJP, "flip", "roll", "repeat", "repeat_interleave", "tril",
                 "triu")
