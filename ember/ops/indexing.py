"""Indexing: ``Tensor.__getitem__``/``__setitem__``, gather/scatter, the index_* family,
masks, nonzero, take/put.

``x[...]`` splits the index the way PyTorch does: ints, slices, None and Ellipsis
become one basic-index *view* (so writes through it reach the base); integer and
boolean tensors left over become one advanced ``index`` op applied to that view
(a copy; its gradient accumulates duplicates with ``index_put(accumulate=True)``).
"""
import contextlib
import numbers
import operator
import warnings

import numpy as np

from .._core import dtype as _dt
from .._core import meta as _meta
from .._core.ckernels import indexing as _ck_indexing
from .._core.ckernels import selection as _ck_sel
from .._core.dispatch import overridable
from .._core.device import backend_for_type, namespace_of
from .._core.tensor import _wrap_dim
from ._helpers import (_F32, _HALF, NeedsOverride, Op, Tensor, _E, apply, apply_inplace,
                       handle_override, host_tensor, write_out, write_out_exact, xp_fn)
from ._batching import _dims_rule
from ._batching_index import (_dynamic_rule, _index_put_rule, _index_rule, _index_select_rule,
                              _index_write_rule, _masked_fill_rule, _masked_scatter_rule,
                              _put_rule, _take_rule)
from ._scalar_check import check_scalar_fits
from .views import _FULL, INDEX_VIEW, INDEX_VIEW_BACKWARD, SELECT, SLICE

__all__ = ["gather", "scatter", "scatter_add", "scatter_reduce", "index_select", "index_add",
           "index_copy", "index_fill", "index_put", "index_put_", "index_reduce", "masked_fill",
           "masked_scatter", "masked_select", "nonzero", "argwhere", "take", "take_along_dim",
           "put"]

# the vjps of index ops read their index tensors (every input past the first one or two)
_SAVE_FROM_1 = tuple(range(1, 72))
_SAVE_FROM_2 = tuple(range(2, 72))
_INDEX_DTYPES = (np.dtype(np.int64), np.dtype(np.int32))


def _zeros(shape, dt, like):
    return host_tensor(np.zeros(shape, dtype=dt), like)


def _dtype_name(dt):
    from .._core.dispatch import _cat_name
    from .._core.dtype import FROM_NP
    return _cat_name(dt if isinstance(dt, _dt.dtype) else FROM_NP[np.dtype(dt)])


# ---- parsing a Python index ---------------------------------------------------------------
_BAD_INDEX = ("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
              "are valid indices (got {})")


def _as_index_array(obj):
    """An advanced index as an int64 or bool array (None if ``obj`` is not one)."""
    if isinstance(obj, Tensor):
        a = obj._data
    elif isinstance(obj, np.ndarray):
        a = obj
    elif isinstance(obj, (list, tuple, range)):  # torch takes any Python sequence
        a = np.asarray([x._data if isinstance(x, Tensor) else x for x in obj]) \
            if any(isinstance(x, Tensor) for x in obj) else np.asarray(obj)
        if a.size == 0:
            a = a.astype(np.int64)
    else:
        return None
    if a.dtype == np.uint8:
        warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype "
                      "torch.bool instead.", UserWarning, stacklevel=4)
        a = a.astype(bool)
    if a.dtype.kind != "b" and a.dtype not in _INDEX_DTYPES:
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return a


def _norm_slice(s, n):
    step = 1 if s.step is None else operator.index(s.step)
    if step == 0:
        raise ValueError("slice step cannot be zero")
    if step < 0:
        raise ValueError("step must be greater than zero")
    start = None if s.start is None else _as_index(s.start)
    stop = None if s.stop is None else _as_index(s.stop)
    if type(n) is int and type(start) in _PLAIN and type(stop) in _PLAIN:
        return slice(start, stop, step).indices(n)
    # int subclasses (ember.compile's symbolic sizes) stay: slice.indices would make ints
    return _bound(start, n, 0), _bound(stop, n, n), step


_PLAIN = (int, type(None))


def _as_index(v):
    # operator.index turns int subclasses into ints; ember.compile's sizes must stay
    return v if isinstance(v, int) and type(v) is not bool else operator.index(v)


def _bound(v, n, default):
    """A slice bound clamped into [0, n] (positive step), as ``slice.indices``."""
    if v is None:
        return default
    if v < 0:
        v = v + n
        return 0 if v < 0 else v
    return n if v > n else v


def _as_tuple(item):
    """torch's treatSequenceAsTuple: a short list holding a tensor, a sequence, a slice,
    None or Ellipsis is a tuple of indices (``x[[[0, 1]]]`` is ``x[[0, 1]]``)."""
    if type(item) is tuple:
        return item
    if type(item) is list and len(item) < 32 and any(
            x is None or x is Ellipsis or isinstance(x, (Tensor, list, tuple, range, slice))
            for x in item):
        return tuple(item)
    return (item,)


def _parse(shape, item):
    """(basic key for a view, advanced indices over that view's dims or None)."""
    items = _as_tuple(item)
    conv = []
    consumed = 0
    bad_dtype = None  # torch checks index tensor dtypes after the ints and slices
    for it in items:
        if it is None or it is Ellipsis or type(it) is slice:
            conv.append(it)
            consumed += type(it) is slice
            continue
        if type(it) is bool or (isinstance(it, Tensor) and it.dim() == 0 and
                                it.dtype == _dt.bool):
            conv.append(bool(it))
            continue
        if type(it) is int or isinstance(it, np.integer):
            conv.append(int(it))
            consumed += 1
            continue
        if isinstance(it, int):   # a symbolic size or value (compile, export): kept as is
            conv.append(it)
            consumed += 1
            continue
        if isinstance(it, Tensor) and it.dim() == 0 and not (it.dtype.is_floating_point or it.dtype.is_complex) \
                and it.dtype not in (_dt.bool, _dt.uint8):
            conv.append(int(it._data))
            consumed += 1
            continue
        try:
            a = _as_index_array(it)
        except IndexError as e:
            bad_dtype = bad_dtype or e
            conv.append(slice(None))
            consumed += 1
            continue
        if a is None:
            if hasattr(it, "__index__") and not isinstance(it, float):
                conv.append(operator.index(it))
                consumed += 1
                continue
            raise IndexError(_BAD_INDEX.format(type(it).__name__))
        if a.ndim == 0 and a.dtype == bool:  # a 0-dim (uint8) mask acts as a Python bool
            conv.append(bool(a))
            continue
        conv.append(it if isinstance(it, Tensor) and it._data is a else a)
        consumed += a.ndim if a.dtype == bool else 1
    ndim = len(shape)
    if consumed > ndim:
        if ndim == 0 and any(type(c) is int for c in conv):
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                             "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    basic, adv = [], []
    has_adv = False
    d = 0
    for c in conv:
        if c is None:
            basic.append(None)
            adv.append(None)
        elif c is True or c is False:
            # torch: a new dim of size 1, indexed by an index tensor [0] (True) or [] (False)
            # that broadcasts with the other advanced indices
            basic.append(None)
            adv.append(np.zeros(int(c), dtype=np.int64))
            has_adv = True
        elif c is Ellipsis:
            k = ndim - consumed
            basic.extend([_FULL] * k)
            adv.extend([None] * k)
            d += k
            consumed = ndim  # a second Ellipsis expands to nothing
        elif type(c) is int or isinstance(c, int) and not isinstance(c, bool):
            n = shape[d]
            if not -n <= c < n:
                raise IndexError(f"index {c} is out of bounds for dimension {d} with size {n}")
            basic.append(c % n)
            d += 1
        elif type(c) is slice:
            r = _norm_slice(c, shape[d])
            # a bound that is a traced size (an int subclass under ember.compile) keeps its
            # slice: x[:t] is one program for every t, the full one included
            full = r == (0, shape[d], 1) and all(
                b is None or type(b) is int or isinstance(b, np.integer)
                for b in (c.start, c.stop, c.step))
            basic.append(_FULL if full else r)
            adv.append(None)
            d += 1
        else:
            orig, c = c, _arr(c)
            k = c.ndim if c.dtype == bool else 1
            if c.dtype == bool:
                for j in range(k):
                    if c.shape[j] != shape[d + j] and bad_dtype is None:
                        bad_dtype = IndexError(
                            f"The shape of the mask {list(c.shape)} at index {j} does not "
                            f"match the shape of the indexed tensor {list(shape[d:])} at index "
                            f"{j}")
            basic.extend([_FULL] * k)
            adv.append(orig)
            d += k
            has_adv = True
    if bad_dtype is not None:
        raise bad_dtype
    while basic and basic[-1] == _FULL:
        basic.pop()
    if not has_adv:
        return tuple(basic), None
    while adv and adv[-1] is None:
        adv.pop()
    return tuple(basic), adv


def _basic_view(x, key):
    if not key:
        return x
    if len(key) == 1 or all(k == _FULL for k in key[:-1]):
        last = key[-1]
        if isinstance(last, int):
            return apply(SELECT, (x,), {"key": key})
        if type(last) is tuple:
            return apply(SLICE, (x,), {"key": key})
    return apply(INDEX_VIEW, (x,), {"key": key})


# ---- advanced index / index_put -----------------------------------------------------------
def _adv_key(indices):
    key = []
    for i in indices:
        if i is None:
            key.append(slice(None))
        elif type(i) is np.ndarray and i.dtype == bool:
            key.extend(np.nonzero(i))
        else:
            key.append(i)
    return tuple(key)


def _torch_index_error(e):
    return IndexError(str(e).replace("axis", "dimension").replace("arrays", "tensors"))


def _index_kernel(xp, x, *indices):
    try:
        r = x[_adv_key(indices)]
    except IndexError as e:
        raise _torch_index_error(e) from None
    return r if type(r) is np.ndarray else xp.asarray(r)


def _index_vjp(ctx, g, x, *indices):
    shape, dt = ctx.in_meta[0]
    return (apply(INDEX_PUT, (_zeros(shape, g.dtype.np, g), g) + indices,
                  {"accumulate": True}),) + (None,) * len(indices)


def _index_shape(x, *indices):
    pos, shapes = [], []
    for i, ix in enumerate(indices):
        if ix is None:
            continue
        if isinstance(ix, _meta.TensorMeta) and ix.dtype.category == 0:
            raise _meta.DataDependentShape("a boolean mask selects a data-dependent count")
        pos.append(i)
        shapes.append(ix.shape if isinstance(ix, _meta.TensorMeta) else ())
    b = _meta.broadcast_shapes(*shapes)
    if not pos:
        return x.shape, x.dtype
    if pos == list(range(pos[0], pos[-1] + 1)):  # adjacent index tensors stay in place
        return x.shape[:pos[0]] + b + x.shape[pos[-1] + 1:], x.dtype
    return b + tuple(s for i, s in enumerate(x.shape) if i not in pos), x.dtype


INDEX = Op("index", _index_kernel, _index_vjp, save_inputs=_SAVE_FROM_1, shape=_index_shape,
           batch=_index_rule)


def _index_put_kernel(xp, x, values, *indices, accumulate):
    key = _adv_key(indices)
    out = x.copy()
    v = values if type(values) is np.ndarray else xp.asarray(values)
    if v.dtype != x.dtype:
        v = v.astype(x.dtype)
    try:
        if accumulate:
            xp.add.at(out, key, v)
        else:
            out[key] = v
    except IndexError as e:
        raise _torch_index_error(e) from None
    except ValueError as e:
        raise RuntimeError(str(e).replace("array", "tensor")) from None
    return out


def _index_put_vjp(ctx, g, x, values, *indices, accumulate):
    need = ctx.needs_input_grad
    gx = gv = None
    if need[0]:
        gx = g if accumulate else apply(INDEX_PUT, (g, 0) + indices, {"accumulate": False})
    if need[1]:
        gv = apply(INDEX, (g,) + indices, _E)
    return (gx, gv) + (None,) * len(indices)


INDEX_PUT = Op("index_put", _index_put_kernel, _index_put_vjp, save_inputs=_SAVE_FROM_2,
               shape=lambda x, values, *indices, accumulate: (x.shape, x.dtype),
               batch=_index_put_rule)


def _arr(a):
    return a._data if isinstance(a, Tensor) else a


def _shape_probe(a):
    """A host stand-in for index ``a`` that gives the indexing result's shape: integer
    indices by their shape alone, boolean masks by their values (copied to the host)."""
    d = _arr(a)
    if d is None or type(d) is np.ndarray:
        return d
    if d.dtype != bool:
        return np.zeros(d.shape, np.intp)
    b = backend_for_type(type(d))
    return np.zeros(d.shape, bool) if b is None else np.asarray(b.to_host(d))


def _wrap_indices(adv, like):
    # host index arrays (from Python lists, ints, bools) go to the indexed tensor's device
    return tuple(a if a is None or isinstance(a, Tensor) else host_tensor(a, like) for a in adv)


def _getitem(self, item):
    t = type(item)
    if t is int:  # hot path: x[i]
        # not .shape: building a Size costs ~5% of x[i]; an input of a compiled or exported
        # region has its symbolic sizes in _sym_shape
        shp = self.__dict__.get("_sym_shape") or self._data.shape
        if shp and -shp[0] <= item < shp[0]:
            return apply(SELECT, (self,), {"key": (item % shp[0],)})
    try:
        key, adv = _parse(self.__dict__.get("_sym_shape") or self._data.shape, item)
    except AttributeError:
        return handle_override(_getitem, (self, item), {})
    v = _basic_view(self, key)
    if adv is None:
        return v if v is not self else apply(INDEX_VIEW, (self,), {"key": ()})
    try:
        return apply(INDEX, (v,) + _wrap_indices(adv, self), _E)
    except NeedsOverride:
        return handle_override(_getitem, (self, item), {})


def _fit_value(value, shape):
    """``value`` with surplus leading size-1 dims dropped, checked to broadcast to ``shape``."""
    shp = value.shape
    k = 0
    while len(shp) - k > len(shape) and shp[k] == 1:
        k += 1
    if k:
        value = value.reshape(shp[k:])
        shp = shp[k:]
    if len(shp) > len(shape):
        raise RuntimeError(f"expand({value.type()}{{{list(shp)}}}, size={list(shape)}): the "
                           f"number of sizes provided ({len(shape)}) must be greater or equal to "
                           f"the number of dimensions in the tensor ({len(shp)})")
    return value


def _setitem(self, item, value):
    if isinstance(value, numbers.Number) and not isinstance(value, Tensor):
        _check_setitem_scalar(value, self.dtype.np)  # torch converts the value first
    key, adv = _parse(self.shape, item)
    target = _basic_view(self, key)
    if isinstance(value, Tensor) and value.device != self.device:
        value = value.to(self.device)
    elif not isinstance(value, (Tensor, numbers.Number)):
        from .creation import tensor
        value = tensor(value, dtype=self.dtype)
    if adv is None:
        if isinstance(value, Tensor) and value.dim() == 0:
            target.fill_(value)  # torch fills with a 0-dim value: it may be one of self's
            return
        if isinstance(value, Tensor):
            value = _fit_value(value, target.shape)
        target.copy_(value)
        return
    idx = _wrap_indices(adv, self)
    if type(item) is bool and isinstance(value, Tensor):
        value = value.to(self.dtype)  # t[True] = v is a copy for torch (it casts)
    overlap = True
    if isinstance(value, Tensor):
        if value.dim():
            # the shape of the indexed region, worked out on the host
            probe = np.broadcast_to(np.empty((), bool), target.shape)[
                _adv_key([_shape_probe(a) for a in adv])]
            value = _fit_value(value, probe.shape)
        if value.dtype != self.dtype:
            # torch casts only for one boolean mask with a one-element value (its masked_fill
            # path); anything else goes through index_put_, which wants matching dtypes
            real = [_arr(a) for a in adv if a is not None]
            if len(real) == 1 and real[0].dtype == bool and value.numel() == 1:
                value = value.to(self.dtype)
            else:
                _index_put_args(target, adv, value)
        if value.dim() == 0 and _masked_fill_path(adv):
            overlap = "target"  # torch's masked_fill_ reads the value first
    apply_inplace(INDEX_PUT, target, (value,) + idx, {"accumulate": False}, overlap=overlap)


def _masked_fill_path(adv):
    """Whether torch writes ``t[adv] = value`` (0-dim value) by masked_fill_: one boolean mask."""
    real = [_arr(a) for a in adv if a is not None]
    return len(real) == 1 and real[0].dtype == bool


def _check_setitem_scalar(value, dt):
    # torch parses the scalar as int64 or double first ("Overflow when unpacking long long"),
    # and writes half types through double, so they saturate instead of raising
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and \
            not -(1 << 63) <= int(value) < (1 << 63):
        raise ValueError("Overflow when unpacking long long")
    check_scalar_fits(value, dt, check_float_range=dt.itemsize > 2)


Tensor.__getitem__ = _getitem
Tensor.__setitem__ = _setitem


def _index_put_args(self, indices, values):
    if not isinstance(indices, (tuple, list)):
        raise TypeError("index_put(): argument 'indices' must be tuple of Tensors")
    adv = []
    for i in indices:
        if i is None:
            adv.append(None)
            continue
        a = _as_index_array(i)
        if a is None:
            raise TypeError("index_put(): argument 'indices' must be tuple of Tensors")
        adv.append(i if isinstance(i, Tensor) and i._data is a else a)
    if len([a for a in adv if a is not None]) and \
            sum(_arr(a).ndim if a is not None and _arr(a).dtype == bool else 1
                for a in adv) > \
            self.dim():
        raise IndexError(f"too many indices for tensor of dimension {self.dim()} (got "
                         f"{len(adv)})")
    if isinstance(values, Tensor) and values.dtype != self.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{_dtype_name(self.dtype)} for the destination and "
                           f"{_dtype_name(values.dtype)} for the source.")
    return (values,) + _wrap_indices(adv, self)


@overridable
def index_put(input, indices, values, accumulate=False):
    """Out-of-place ``input[indices] = values`` (``+=`` with ``accumulate=True``)."""
    return apply(INDEX_PUT, (input,) + _index_put_args(input, indices, values),
                 {"accumulate": bool(accumulate)})


@overridable
def index_put_(input, indices, values, accumulate=False):
    """In-place ``input[indices] = values`` (``+=`` with ``accumulate=True``)."""
    return apply_inplace(INDEX_PUT, input, _index_put_args(input, indices, values),
                         {"accumulate": bool(accumulate)})


Tensor.index_put = index_put
Tensor.index_put_ = index_put_


# ---- gather / scatter ---------------------------------------------------------------------
def _check_bounds(idx, n, dim, allow_neg=False):
    if idx.size:
        lo, hi = idx.min(), idx.max()
        if hi >= n or lo < (-n if allow_neg else 0):
            bad = hi if hi >= n else lo
            raise RuntimeError(f"index {bad} is out of bounds for dimension {dim} with size {n}")


def _gather_kernel(xp, x, idx, dim):
    if x.ndim == 0 or idx.ndim == 0:
        x1, i1 = x.reshape(-1), idx.reshape(-1)
        return _gather_kernel(xp, x1, i1, 0).reshape(idx.shape)
    r = _ck_sel.gather(x, idx, dim)  # one C loop (bounds checked in it)
    if r is not None:
        return r
    _check_bounds(idx, x.shape[dim], dim)
    # one flat take: take_along_axis builds a broadcast fancy index (~5x slower)
    return xp.take(x.reshape(-1), _flat_index(xp, idx, x.shape, dim))


def _flat_index(xp, idx, shape, dim):
    """The C-order positions, in an array of ``shape``, of the elements that ``idx`` (checked
    to lie in ``[0, shape[dim])``, of no larger shape) picks along ``dim``: gather's and
    scatter's index as one flat intp array of ``idx``'s shape."""
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    lin = idx.astype(np.intp, copy=True)
    if strides[dim] != 1:
        lin *= strides[dim]
    base = 0  # the other dimensions' offsets, broadcast: idx.size / idx.shape[dim] elements
    for d, n in enumerate(idx.shape):
        if d != dim and n > 1:
            base = base + (xp.arange(n, dtype=np.intp) * strides[d]).reshape(
                (1,) * d + (n,) + (1,) * (idx.ndim - d - 1))
    if not isinstance(base, int):
        lin += base
    return lin


def _gather_vjp(ctx, g, x, idx, dim):
    shape, _ = ctx.in_meta[0]
    return apply(SCATTER_ADD, (_zeros(shape, g.dtype.np, g), idx, g), {"dim": dim}), None


GATHER = Op("gather", _gather_kernel, _gather_vjp, save_inputs=(1,),
            shape=lambda x, idx, dim: (idx.shape, x.dtype), batch=_dims_rule)


def _check_index(name, x, idx, dim, src=None, src_name="self"):
    if not isinstance(idx, Tensor):
        raise TypeError(f"{name}(): argument 'index' must be Tensor, not {type(idx).__name__}")
    if idx.dtype not in (_dt.int64, _dt.int32):
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")
    xn, inn = x.dim(), idx.dim()
    if max(xn, 1) != max(inn, 1) and idx.numel():
        raise RuntimeError(f"Index tensor must have the same number of dimensions as "
                           f"{'input' if name == 'gather' else 'self'} tensor")
    d = _wrap_dim(dim, xn)
    if xn and inn and idx.numel():
        for k in range(xn):
            if k != d and idx.shape[k] > x.shape[k]:
                raise RuntimeError(f"Size does not match at dimension {k} expected index "
                                   f"{list(idx.shape)} to be no larger than {src_name} "
                                   f"{list(x.shape)} apart from dimension {d}")
            if src is not None and isinstance(src, Tensor) and \
                    idx.shape[k] > src.shape[k]:
                raise RuntimeError(f"Size does not match at dimension {k} expected index "
                                   f"{list(idx.shape)} to be no larger than src "
                                   f"{list(src.shape)}")
    return d


@overridable
def gather(input, dim, index, *, sparse_grad=False, out=None):
    """Gathers values of ``input`` along ``dim`` at the positions in ``index``."""
    try:
        d = _check_index("gather", input, index, dim)
        r = apply(GATHER, (input, index), {"dim": d})
    except (AttributeError, NeedsOverride):
        return handle_override(gather, (input, dim, index), {})
    return r if out is None else write_out_exact(out, r, (input, index))


def _scatter_prep(x, idx, src, dim):
    """(output copy, its flat view, flat index, flat values) with 0-dim inputs seen as
    1-element vectors: flat indexing (and 1-d ``ufunc.at``) is several times faster than a
    key of broadcast grids, and visits the elements in the same (C) order."""
    out = x.copy(order="C")
    xp = namespace_of(out)
    o = out.reshape(-1) if out.ndim == 0 else out
    i = idx.reshape(-1) if idx.ndim == 0 else idx
    _check_bounds(i, o.shape[dim] if o.ndim else 1, dim)
    if hasattr(src, "ndim"):  # an array of any backend (else a Python scalar)
        s = src.reshape(-1) if src.ndim == 0 else src
        src = s[tuple(slice(0, n) for n in i.shape)]
        if src.dtype != x.dtype:
            src = src.astype(x.dtype)
        src = src.reshape(-1)
    return out, out.reshape(-1), _flat_index(xp, i, o.shape, dim).reshape(-1), src


_UFUNC = {"add": np.add, "sum": np.add, "mean": np.add, "multiply": np.multiply,
          "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}


def _scatter_kernel(xp, x, idx, src, dim, reduce=None):
    if reduce == "add" and x.ndim and idx.ndim:
        r = _ck_sel.scatter_add(x, idx, src, dim)  # one C loop, torch's order of sums
        if r is not None:
            return r
        if x.dtype in _HALF and hasattr(src, "dtype"):
            # halves accumulate in float32, rounded once at the end (torch's values)
            return _scatter_kernel(xp, x.astype(_F32), idx, src.astype(_F32), dim,
                                   reduce).astype(x.dtype)
    out, o, key, v = _scatter_prep(x, idx, src, dim)
    if reduce is None:
        o[key] = v
    else:
        xp_fn(xp, _UFUNC[reduce]).at(o, key, v)
    return out


def _pad_to(g, shape):
    """``g`` (an index-shaped gradient) zero-padded up to ``shape``."""
    if tuple(g.shape) == tuple(shape):
        return g
    if not shape:
        return g.reshape(())
    key = tuple((0, n, 1) for n in g.shape) if g.dim() else ((0, 1, 1),)
    gg = g if g.dim() else g.reshape((1,))
    return apply(INDEX_VIEW_BACKWARD, (gg,), {"shape": tuple(shape), "key": key})


def _src_grad(ctx, g, idx, dim, i=2):
    if not ctx.needs_input_grad[i]:
        return None
    return _pad_to(apply(GATHER, (g, idx), {"dim": dim}), ctx.in_meta[i][0])


def _scatter_vjp(ctx, g, x, idx, src, dim, reduce=None):
    if reduce is not None:
        raise RuntimeError("the derivative for 'scatter' with a reduce argument is not "
                           "implemented.")
    gx = apply(SCATTER, (g, idx, 0), {"dim": dim}) if ctx.needs_input_grad[0] else None
    return gx, None, _src_grad(ctx, g, idx, dim)


SCATTER = Op("scatter", _scatter_kernel, _scatter_vjp, save_inputs=(1,),
             shape=lambda x, *a, **k: (x.shape, x.dtype), batch=_dims_rule)
SCATTER_ADD = Op("scatter_add", lambda xp, x, idx, src, dim: _scatter_kernel(xp, x, idx, src, dim,
                                                                             "add"),
                 lambda ctx, g, x, idx, src, dim: (g, None, _src_grad(ctx, g, idx, dim)),
                 save_inputs=(1,), shape=lambda x, *a, **k: (x.shape, x.dtype), batch=_dims_rule)


def _scatter_args(name, input, dim, index, src, value, reduce=None):
    if src is None:
        src = value
    if src is None:
        raise TypeError(f"{name}() missing required argument 'src' or 'value'")
    d = _check_index(name, input, index, dim, src)
    if isinstance(src, Tensor) and src.dtype != input.dtype:
        raise RuntimeError(f"{name}(): Expected self.dtype to be equal to src.dtype")
    if not isinstance(src, Tensor) and isinstance(input, Tensor):
        # torch converts a scalar value to self's dtype first (1.5 multiplies an int
        # tensor by 1), refusing one that overflows it
        dt = input.dtype.np
        check_scalar_fits(src, dt)
        if dt.kind in "iub" and isinstance(src, numbers.Number):
            src = np.asarray(src).astype(dt).item()
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    if reduce is not None and isinstance(src, Tensor):
        warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated and will "
                      "be removed in a future PyTorch release. Use torch.scatter_reduce instead "
                      "for more reduction options.", UserWarning, stacklevel=3)
    return d, src


@overridable
def scatter(input, dim, index, src=None, value=None, *, reduce=None, out=None):
    """Writes ``src`` (a tensor or a scalar ``value``) into ``input`` at ``index`` along
    ``dim`` (out of place)."""
    d, src = _scatter_args("scatter", input, dim, index, src, value, reduce)
    p = {"dim": d} if reduce is None else {"dim": d, "reduce": reduce}
    r = apply(SCATTER, (input, index, src), p)
    return r if out is None else write_out(out, r, (input, index, src))


def _scatter_(self, dim, index, src=None, value=None, *, reduce=None):
    d, src = _scatter_args("scatter_", self, dim, index, src, value, reduce)
    p = {"dim": d} if reduce is None else {"dim": d, "reduce": reduce}
    return apply_inplace(SCATTER, self, (index, src), p)


@overridable
def scatter_add(input, dim, index, src, *, out=None):
    """Adds the values of ``src`` into ``input`` at ``index`` along ``dim`` (out of place)."""
    d, src = _scatter_args("scatter_add", input, dim, index, src, None)
    r = apply(SCATTER_ADD, (input, index, src), {"dim": d})
    return r if out is None else write_out(out, r, (input, index, src))


def _scatter_add_(self, dim, index, src):
    d, src = _scatter_args("scatter_add_", self, dim, index, src, None)
    return apply_inplace(SCATTER_ADD, self, (index, src), {"dim": d})


Tensor.gather = gather
Tensor.scatter = scatter
Tensor.scatter_ = _scatter_
Tensor.scatter_add = scatter_add
Tensor.scatter_add_ = _scatter_add_


# ---- scatter_reduce -----------------------------------------------------------------------
def _identity(reduce, dt):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    big = np.inf if dt.kind in "fc" or dt.kind == "V" else (
        True if dt == bool else np.iinfo(dt).max)
    if reduce == "amin":
        return big
    return -np.inf if dt.kind in "fcV" else (False if dt == bool else np.iinfo(dt).min)


def _scatter_reduce_kernel(xp, x, idx, src, dim, reduce, include_self):
    out, o, key, v = _scatter_prep(x, idx, src, dim)
    calc = o.astype(np.float32) if o.dtype.kind == "V" or o.dtype == np.float16 else o
    if not include_self:
        calc[key] = _identity(reduce, o.dtype)
    vv = v.astype(calc.dtype) if v.dtype != calc.dtype else v
    xp_fn(xp, _UFUNC[reduce]).at(calc, key, vv)
    if reduce == "mean":
        cnt = xp.full(o.shape, 1 if include_self else 0, dtype=np.int64)
        xp.add.at(cnt, key, 1)
        safe = xp.maximum(cnt, 1)
        calc[...] = calc // safe if calc.dtype.kind in "iub" else calc / safe
    if calc is not o:
        o[...] = calc.astype(o.dtype)
    return out


def _scatter_reduce_vjp(ctx, g, x, idx, src, dim, reduce, include_self):
    from .pointwise import where
    out = ctx.out
    need = ctx.needs_input_grad
    gx = gs = None
    scattered = apply(SCATTER, (_zeros(out.shape, bool, g), idx, True), {"dim": dim})
    if reduce == "sum":
        gx = g if include_self else g.masked_fill(scattered, 0)
        gs = apply(GATHER, (g, idx), {"dim": dim})
    elif reduce == "mean":
        ones = host_tensor(np.ones(idx.shape, dtype=g.dtype.np), g)
        base = _zeros(out.shape, g.dtype.np, g) + (1 if include_self else 0)
        cnt = apply(SCATTER_ADD, (base, idx, ones), {"dim": dim})
        cnt = cnt.masked_fill(cnt == 0, 1)
        gx = g / cnt if include_self else (g / cnt).masked_fill(scattered, 0)
        gs = apply(GATHER, (g / cnt, idx), {"dim": dim})
    elif reduce == "prod":
        gx, gs = _prod_grads(g, out, x, idx, src, dim, include_self, need)
        if not include_self and gx is not None:
            gx = gx.masked_fill(scattered, 0)
    else:
        s = src[tuple(slice(0, n) for n in idx.shape)] if src.dim() else src
        out_at = apply(GATHER, (out, idx), {"dim": dim})
        hit_src = (s == out_at).to(g.dtype)
        hit_self = (x == out) if include_self else where(scattered, False, True)
        hit_self = hit_self.to(g.dtype)
        cnt = apply(SCATTER_ADD, (hit_self, idx, hit_src), {"dim": dim})
        share = g / cnt.masked_fill(cnt == 0, 1)
        gx = share * hit_self
        gs = apply(GATHER, (share, idx), {"dim": dim}) * hit_src
    if gs is not None and need[2]:
        gs = _pad_to(gs, ctx.in_meta[2][0])
    return (gx if need[0] else None), None, (gs if need[2] else None)


def _prod_grads(g, out, x, idx, src, dim, include_self, need):
    """Zero-safe derivatives of a scatter product: each element's gradient is the product
    of the other members of its group, even where members are zero (torch's formula)."""
    from .pointwise import where
    p = {"dim": dim, "reduce": "prod", "include_self": include_self}
    gx = gs = None
    if need[0]:
        # x has one member per group: the product of the rest is the group's product with
        # x's zero (if any) taken as 1, divided by that masked x
        mx = x.masked_fill(x == 0, 1)
        gx = g * apply(SCATTER_REDUCE, (mx, idx, src), p) / mx
    if need[2]:
        s = src[tuple(slice(0, n) for n in idx.shape)] if src.dim() else src
        zero = s == 0
        nz = apply(SCATTER_ADD, (_zeros(out.shape, g.dtype.np, g), idx,
                                 zero.to(g.dtype)), {"dim": dim})
        single = zero & (apply(GATHER, (nz, idx), {"dim": dim}) == 1)
        # a lone zero's gradient: the group's product with that zero taken as 1
        alone = apply(SCATTER_REDUCE, (x, idx, s.masked_fill(single, 1)), p)
        gs = where(single, apply(GATHER, (g * alone, idx), {"dim": dim}),
                   apply(GATHER, (g * out, idx), {"dim": dim}) / s.masked_fill(zero, 1))
    return gx, gs


SCATTER_REDUCE = Op("scatter_reduce", _scatter_reduce_kernel, _scatter_reduce_vjp,
                    save_inputs=True, save_output=True,
                    shape=lambda x, *a, **k: (x.shape, x.dtype), batch=_dims_rule)


def _scatter_reduce_args(input, dim, index, src, reduce):
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    return _scatter_args("scatter_reduce", input, dim, index, src, None)[0]


@overridable
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True, out=None):
    """Reduces all values of ``src`` into ``input`` at ``index`` along ``dim`` with
    ``reduce`` ('sum', 'prod', 'mean', 'amax', 'amin')."""
    d = _scatter_reduce_args(input, dim, index, src, reduce)
    r = apply(SCATTER_REDUCE, (input, index, src),
              {"dim": d, "reduce": reduce, "include_self": bool(include_self)})
    return r if out is None else write_out(out, r, (input, index, src))


def _scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    d = _scatter_reduce_args(self, dim, index, src, reduce)
    return apply_inplace(SCATTER_REDUCE, self, (index, src),
                         {"dim": d, "reduce": reduce, "include_self": bool(include_self)})


Tensor.scatter_reduce = scatter_reduce
Tensor.scatter_reduce_ = _scatter_reduce_


# ---- index_select / index_add / index_copy / index_fill / index_reduce ----------------------
def _vec_index(name, x, dim, index):
    if not isinstance(index, Tensor):
        raise TypeError(f"{name}(): argument 'index' must be Tensor, not "
                        f"{type(index).__name__}")
    if index.dim() > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector")
    if index.dtype not in (_dt.int64, _dt.int32):
        raise IndexError(f"{name}(): Expected dtype int32/int64 for index")
    return _wrap_dim(dim, x.dim())


def _dim_key(idx, dim):
    return (slice(None),) * dim + (idx.reshape(-1).astype(np.intp, copy=False),)


def _index_select_kernel(xp, x, idx, dim):
    if x.ndim == 0 and idx.size != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got "
                           f"{idx.size} value(s)")
    n = x.shape[dim] if x.ndim else 1
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise IndexError("index out of range in self")
    if x.ndim == 0:
        return x.reshape(1)[idx.reshape(-1)].reshape(idx.shape)
    return xp.take(x, idx.reshape(-1), axis=dim)


def _index_select_vjp(ctx, g, x, idx, dim):
    shape, _ = ctx.in_meta[0]
    return apply(INDEX_ADD, (_zeros(shape, g.dtype.np, g), idx, g), {"dim": dim}), None


def _index_select_shape(x, idx, dim):
    if not x.shape:
        return idx.shape, x.dtype
    return x.shape[:dim] + (_meta.numel(idx.shape),) + x.shape[dim + 1:], x.dtype


INDEX_SELECT = Op("index_select", _index_select_kernel, _index_select_vjp, save_inputs=(1,),
                  shape=_index_select_shape, batch=_index_select_rule)


@overridable
def index_select(input, dim, index, *, out=None):
    """The entries of ``input`` along ``dim`` at the positions in the vector ``index``."""
    try:
        d = _vec_index("index_select", input, dim, index)
        r = apply(INDEX_SELECT, (input, index), {"dim": d})
    except (AttributeError, NeedsOverride):
        return handle_override(index_select, (input, dim, index), {})
    if out is None:
        return r
    if isinstance(out, Tensor) and out.dtype is not r.dtype:
        raise RuntimeError("index_select(): self and result must have the same scalar type")
    return write_out(out, r, (input, index))


def _index_write_kernel(mode):
    def kernel(xp, x, idx, src, dim, alpha=1):
        out = x.copy()
        o = out.reshape(-1) if out.ndim == 0 else out
        n = o.shape[dim]
        if idx.size and (idx.min() < -n if mode == "fill" else idx.min() < 0 or idx.max() >= n):
            raise IndexError(f"index out of range in self")
        key = _dim_key(idx, dim)
        if mode == "fill":
            o[key] = src
            return out
        s = src.reshape(-1) if src.ndim == 0 else src
        if s.dtype != x.dtype:
            s = s.astype(x.dtype)
        if mode == "add":
            s = s if alpha == 1 else s * xp.asarray(alpha).astype(x.dtype)
            if not _ck_indexing.index_add(o, dim, idx, s):
                xp.add.at(o, key, s)
        else:
            o[key] = s
        return out
    return kernel


def _index_add_vjp(ctx, g, x, idx, src, dim, alpha=1):
    gs = None
    if ctx.needs_input_grad[2]:
        gs = apply(INDEX_SELECT, (g, idx), {"dim": dim})
        gs = gs * alpha if alpha != 1 else gs
    return g, None, gs


def _index_copy_vjp(ctx, g, x, idx, src, dim):
    gx = apply(INDEX_FILL, (g, idx, 0), {"dim": dim}) if ctx.needs_input_grad[0] else None
    gs = apply(INDEX_SELECT, (g, idx), {"dim": dim}) if ctx.needs_input_grad[2] else None
    return gx, None, gs


def _index_fill_vjp(ctx, g, x, idx, value, dim):
    gx = apply(INDEX_FILL, (g, idx, 0), {"dim": dim}) if ctx.needs_input_grad[0] else None
    if gx is None and ctx.needs_input_grad[2]:
        gx = apply(INDEX_FILL, (g, idx, 0), {"dim": dim})
    # each filled position counts once, however often the index repeats it
    gv = (g - gx).sum() if ctx.needs_input_grad[2] else None
    return gx, None, gv


INDEX_ADD = Op("index_add", _index_write_kernel("add"), _index_add_vjp, save_inputs=(1,),
               shape=lambda x, *a, **k: (x.shape, x.dtype), batch=_index_write_rule)
INDEX_COPY = Op("index_copy", _index_write_kernel("copy"), _index_copy_vjp, save_inputs=(1,),
                shape=lambda x, *a, **k: (x.shape, x.dtype), batch=_index_write_rule)
INDEX_FILL = Op("index_fill", _index_write_kernel("fill"), _index_fill_vjp, save_inputs=(1,),
                shape=lambda x, *a, **k: (x.shape, x.dtype), batch=_index_write_rule)


def _index_src_check(name, x, d, index, src):
    xs, ss = x.shape, src.shape
    if src.dtype != x.dtype:
        raise RuntimeError(f"{name}(): self ({_dtype_name(x.dtype)}) and source "
                           f"({_dtype_name(src.dtype)}) must have the same scalar type")
    n_idx = index.numel()
    want = tuple(n_idx if k == d else s for k, s in enumerate(xs))
    if xs and (len(ss) != len(xs) or ss != want) and not (len(ss) == 0 and n_idx == 1
                                                             and xs == (1,)):
        if len(ss) == len(xs) and ss[d] != n_idx:
            raise IndexError(f"{name}(): Number of indices ({n_idx}) should be equal to "
                             f"source.size(dim) ({ss[d]})")
        raise RuntimeError(f"{name}(): Source/destination tensor must have same slice shapes. "
                           f"Destination slice shape: {list(xs)} at dimension {d} and source "
                           f"slice shape: {list(ss)} at dimension 0.")


@overridable
def index_add(input, dim, index, source, *, alpha=1, out=None):
    """Adds ``alpha * source`` into ``input`` at the positions ``index`` along ``dim``."""
    d = _vec_index("index_add", input, dim, index)
    _index_src_check("index_add", input, d, index, source)
    r = apply(INDEX_ADD, (input, index, source), {"dim": d, "alpha": alpha})
    return r if out is None else write_out(out, r, (input, index, source))


def _index_add_(self, dim, index, source, *, alpha=1):
    d = _vec_index("index_add_", self, dim, index)
    _index_src_check("index_add_", self, d, index, source)
    return apply_inplace(INDEX_ADD, self, (index, source), {"dim": d, "alpha": alpha})


@overridable
def index_copy(input, dim, index, source, *, out=None):
    """Copies ``source`` into ``input`` at the positions ``index`` along ``dim``."""
    d = _vec_index("index_copy", input, dim, index)
    _index_src_check("index_copy", input, d, index, source)
    r = apply(INDEX_COPY, (input, index, source), {"dim": d})
    return r if out is None else write_out(out, r, (input, index, source))


def _index_copy_(self, dim, index, source):
    d = _vec_index("index_copy_", self, dim, index)
    _index_src_check("index_copy_", self, d, index, source)
    return apply_inplace(INDEX_COPY, self, (index, source), {"dim": d})


def _fill_value(name, value, input=None):
    if isinstance(value, Tensor) and value.dim():
        raise RuntimeError(f"{name} only supports a 0-dimensional value tensor, but got tensor "
                           f"with {value.dim()} dimension(s).")
    if input is not None and isinstance(input, Tensor):
        dt = input.dtype.np
        if name == "index_fill_" and isinstance(value, complex) and dt.kind not in "cV":
            raise RuntimeError("index_fill_(): Converting complex Scalar to non-complex type is "
                               "not supported")
        check_scalar_fits(value, dt)
        if type(value) is int and dt.kind in "iu":
            # C's wrap-around that torch applies (-1 in uint8 is 255); NumPy refuses it
            value = np.array(value, dtype=np.int64).astype(dt)[()]
    return value


@overridable
def index_fill(input, dim, index, value):
    """Fills the entries of ``input`` at ``index`` along ``dim`` with ``value``."""
    d = _vec_index("index_fill", input, dim, index)
    return apply(INDEX_FILL, (input, index, _fill_value("index_fill_", value, input)),
                 {"dim": d})


def _index_fill_(self, dim, index, value):
    d = _vec_index("index_fill_", self, dim, index)
    return apply_inplace(INDEX_FILL, self, (index, _fill_value("index_fill_", value, self)),
                         {"dim": d})


def _index_reduce_index(input, dim, index, source, reduce):
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    d = _vec_index("index_reduce", input, dim, index)
    _index_src_check("index_reduce", input, d, index, source)
    nd = source.dim()
    shp = (1,) * d + (-1,) + (1,) * (nd - d - 1) if nd else (-1,)
    return d, index.reshape(shp).expand(source.shape)


def _beta_warning():
    warnings.warn("index_reduce() is in beta and the API may change at any time.", UserWarning,
                  stacklevel=3)


@overridable
def index_reduce(input, dim, index, source, reduce, *, include_self=True, out=None):
    """Reduces ``source`` into ``input`` at ``index`` along ``dim`` ('prod', 'mean', 'amax',
    'amin')."""
    d, idx = _index_reduce_index(input, dim, index, source, reduce)
    _beta_warning()
    with _index_error():
        r = scatter_reduce(input, d, idx.contiguous(), source, reduce, include_self=include_self)
    return r if out is None else write_out(out, r, (input, index, source))


def _index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    d, idx = _index_reduce_index(self, dim, index, source, reduce)
    _beta_warning()
    with _index_error():
        return _scatter_reduce_(self, d, idx.contiguous(), source, reduce,
                                include_self=include_self)


@contextlib.contextmanager
def _index_error():
    """torch's IndexError for an index out of range, where scatter_reduce (which index_reduce
    runs) raises RuntimeError: checked by the kernel, so vmap and compile need no value."""
    try:
        yield
    except RuntimeError as e:
        if "out of bounds for dimension" in str(e):
            raise IndexError("index out of range in self") from None
        raise


Tensor.index_select = index_select
Tensor.index_add = index_add
Tensor.index_add_ = _index_add_
Tensor.index_copy = index_copy
Tensor.index_copy_ = _index_copy_
Tensor.index_fill = index_fill
Tensor.index_fill_ = _index_fill_
Tensor.index_reduce = index_reduce
Tensor.index_reduce_ = _index_reduce_


# ---- masks ----------------------------------------------------------------------------------
def _check_mask(name, mask):
    if not isinstance(mask, Tensor):
        raise TypeError(f"{name}(): argument 'mask' must be Tensor, not {type(mask).__name__}")
    if mask.dtype != _dt.bool:
        raise RuntimeError(f"{name} only supports boolean masks, but got mask with dtype "
                           f"{mask.dtype.name if mask.dtype.name != 'float32' else 'float'}")


def _masked_fill_kernel(xp, x, mask, value):
    v = value
    if x.dtype.kind not in "cVb" and xp.iscomplexobj(v):
        raise RuntimeError(f"value cannot be converted to type {x.dtype} without overflow")
    return xp.where(mask, xp.asarray(v).astype(x.dtype), x)


def _masked_fill_vjp(ctx, g, x, mask, value):
    from .pointwise import where
    gx = apply(MASKED_FILL, (g, mask, 0), _E) if ctx.needs_input_grad[0] else None
    gv = where(mask, g, 0).sum() if ctx.needs_input_grad[2] else None
    return gx, None, gv


def _masked_shape(x, mask, value):
    shapes = [s.shape for s in (x, mask, value) if isinstance(s, _meta.TensorMeta)]
    return _meta.broadcast_shapes(*shapes), x.dtype


MASKED_FILL = Op("masked_fill", _masked_fill_kernel, _masked_fill_vjp, save_inputs=(1,),
                 shape=_masked_shape, batch=_masked_fill_rule)


@overridable
def masked_fill(input, mask, value):
    """``input`` with the elements where ``mask`` is True replaced by ``value``."""
    _check_mask("masked_fill_", mask)
    try:
        return apply(MASKED_FILL, (input, mask, _fill_value("masked_fill_", value, input)),
                     _E)
    except NeedsOverride:
        return handle_override(masked_fill, (input, mask, value), {})


def _masked_fill_(self, mask, value):
    _check_mask("masked_fill_", mask)
    return apply_inplace(MASKED_FILL, self, (mask, _fill_value("masked_fill_", value, self)),
                         _E)


def _masked_scatter_kernel(xp, x, mask, src):
    xb, mb = xp.broadcast_arrays(x, mask)
    out = xb.copy()
    n = int(mb.sum())
    if src.size < n:
        raise RuntimeError("masked_scatter: expected source to have at least as many elements "
                           "as ones in mask")
    out[mb] = src.reshape(-1)[:n].astype(x.dtype, copy=False)
    return out


def _masked_scatter_vjp(ctx, g, x, mask, src):
    gx = apply(MASKED_FILL, (g, mask, 0), _E) if ctx.needs_input_grad[0] else None
    gs = None
    if ctx.needs_input_grad[2]:
        sel = apply(MASKED_SELECT, (g, mask), _E)
        shape = ctx.in_meta[2][0]
        n = int(np.prod(shape))
        gs = apply(INDEX_VIEW_BACKWARD, (sel,), {"shape": (n,),
                                                 "key": ((0, sel.shape[0], 1),)})
        gs = gs.reshape(shape)
    return gx, None, gs


MASKED_SCATTER = Op("masked_scatter", _masked_scatter_kernel, _masked_scatter_vjp,
                    save_inputs=(1,), shape=lambda x, mask, src: (
                        _meta.broadcast_shapes(x.shape, mask.shape), x.dtype),
                    batch=_masked_scatter_rule)


@overridable
def masked_scatter(input, mask, source):
    """Copies elements of ``source`` into ``input`` where ``mask`` is True (in order)."""
    _check_mask("masked_scatter_", mask)
    if source.dtype != input.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but "
                           f"got {_dtype_name(input.dtype)} and "
                           f"{_dtype_name(source.dtype)}")
    return apply(MASKED_SCATTER, (input, mask, source), _E)


def _masked_scatter_(self, mask, source):
    _check_mask("masked_scatter_", mask)
    if source.dtype != self.dtype:
        raise RuntimeError(f"masked_scatter_: expected self and source to have same dtypes but "
                           f"got {_dtype_name(self.dtype)} and "
                           f"{_dtype_name(source.dtype)}")
    return apply_inplace(MASKED_SCATTER, self, (mask, source), _E)


def _masked_select_kernel(xp, x, mask):
    xb, mb = xp.broadcast_arrays(x, mask)
    return xb[mb]


def _masked_select_vjp(ctx, g, x, mask):
    shape = np.broadcast_shapes(ctx.in_meta[0][0], mask.shape)
    return apply(MASKED_SCATTER, (_zeros(shape, g.dtype.np, g), mask, g), _E), None


def _data_dependent(*args, **params):
    raise _meta.DataDependentShape("the output size depends on the mask's values")


MASKED_SELECT = Op("masked_select", _masked_select_kernel, _masked_select_vjp, save_inputs=(1,),
                   shape=_data_dependent, batch=_dynamic_rule)


@overridable
def masked_select(input, mask, *, out=None):
    """A 1-D tensor of the elements of ``input`` where the (broadcast) ``mask`` is True."""
    if not isinstance(mask, Tensor) or mask.dtype != _dt.bool:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask")
    r = apply(MASKED_SELECT, (input, mask), _E)
    return r if out is None else write_out(out, r, (input, mask))


Tensor.masked_fill = masked_fill
Tensor.masked_fill_ = _masked_fill_
Tensor.masked_scatter = masked_scatter
Tensor.masked_scatter_ = _masked_scatter_
Tensor.masked_select = masked_select


# ---- nonzero / argwhere -----------------------------------------------------------------------
NONZERO = Op("nonzero", lambda xp, x: xp.argwhere(x).astype(np.int64, copy=False), None,
             differentiable=False, shape=_data_dependent, batch=_dynamic_rule)


@overridable
def nonzero(input, *, out=None, as_tuple=False):
    """Indices of the non-zero elements: an (n, ndim) tensor, or a tuple of 1-D index tensors
    with ``as_tuple=True``."""
    if as_tuple:
        x = input if input.dim() else input.reshape((1,))
        r = apply(NONZERO, (x,), _E)
        return tuple(r[:, k] for k in range(x.dim()))
    r = apply(NONZERO, (input,), _E)
    return r if out is None else write_out(out, r)


@overridable
def argwhere(input):
    """Indices of the non-zero elements of ``input`` as an (n, ndim) tensor."""
    return apply(NONZERO, (input,), _E)


Tensor.nonzero = nonzero
Tensor.argwhere = argwhere


# ---- take / put / take_along_dim --------------------------------------------------------------
def _flat_bounds(idx, n):
    if idx.size and (idx.min() < -n or idx.max() >= n):
        bad = idx.max() if idx.max() >= n else idx.min()
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} "
                         f"elements.")


def _take_kernel(xp, x, idx):
    flat = x.reshape(-1)
    _flat_bounds(idx, flat.size)
    return flat[idx]


def _take_vjp(ctx, g, x, idx):
    shape, _ = ctx.in_meta[0]
    zeros = _zeros((int(np.prod(shape)),), g.dtype.np, g)
    return apply(PUT, (zeros, idx, g), {"accumulate": True}).reshape(shape), None


TAKE = Op("take", _take_kernel, _take_vjp, save_inputs=(1,),
          shape=lambda x, idx: (idx.shape, x.dtype), batch=_take_rule)


def _put_kernel(xp, x, idx, src, accumulate=False):
    out = x.copy()
    flat = out.reshape(-1)
    _flat_bounds(idx, flat.size)
    i = idx.reshape(-1)
    s = xp.asarray(src)
    s = s.reshape(-1) if s.ndim else s
    s = s.astype(x.dtype, copy=False)
    if accumulate:
        xp.add.at(flat, i, s)
    else:
        flat[i] = s
    return out


def _put_vjp(ctx, g, x, idx, src, accumulate=False):
    gx = gs = None
    if ctx.needs_input_grad[0]:
        gx = g if accumulate else apply(PUT, (g, idx, 0), {"accumulate": False})
    if ctx.needs_input_grad[2]:
        gs = apply(TAKE, (g, idx), _E).reshape(ctx.in_meta[2][0])
    return gx, None, gs


PUT = Op("put", _put_kernel, _put_vjp, save_inputs=(1,),
         shape=lambda x, *a, **k: (x.shape, x.dtype), batch=_put_rule)


@overridable
def take(input, index):
    """The elements of ``input`` (seen as 1-D) at ``index``; the result has ``index``'s shape."""
    if index.dtype != _dt.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got "
                           f"{_dtype_name(index.dtype)}")
    return apply(TAKE, (input, index), _E)


def _put_args(self, index, source):
    if index.dtype != _dt.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got "
                           f"{_dtype_name(index.dtype)}")
    if isinstance(source, Tensor):
        if source.numel() != index.numel():
            raise RuntimeError(f"put_(): Expected source and index to have the same number of "
                               f"elements, but got source.numel() = {source.numel()}, "
                               f"index.numel() = {index.numel()}")
        if source.dtype != self.dtype:
            raise RuntimeError(f"put_(): self and source expected to have the same dtype, but "
                               f"got self.dtype = {self.dtype} and source.dtype = "
                               f"{source.dtype}")


@overridable
def put(input, index, source, accumulate=False):
    """Out-of-place ``put_``: writes ``source`` into the flattened ``input`` at ``index``."""
    _put_args(input, index, source)
    return apply(PUT, (input, index, source), {"accumulate": bool(accumulate)})


def _put_(self, index, source, accumulate=False):
    _put_args(self, index, source)
    return apply_inplace(PUT, self, (index, source), {"accumulate": bool(accumulate)})


@overridable
def take_along_dim(input, indices, dim=None, *, out=None):
    """Picks values of ``input`` at ``indices`` along ``dim`` (broadcasting the other dims);
    with ``dim=None`` both are flattened."""
    if indices.dtype != _dt.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{_dtype_name(indices.dtype)}")
    if dim is None:
        r = gather(input.reshape(-1), 0, indices.reshape(-1))
    else:
        n = input.dim()
        if n != indices.dim():
            raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                               f"number of dimensions, but got {n} dimensions for input, and "
                               f"{indices.dim()} dimensions for indices")
        d = _wrap_dim(dim, n)
        xs, ids = list(input.shape), list(indices.shape)
        xs[d] = ids[d] = 1
        b = list(np.broadcast_shapes(tuple(xs), tuple(ids)))
        bx, bi = list(b), list(b)
        bx[d], bi[d] = input.shape[d], indices.shape[d]
        r = gather(input.expand(*bx), d, indices.expand(*bi))
    return r if out is None else write_out(out, r, (input, indices))


Tensor.take = take
Tensor.put = put
Tensor.put_ = _put_
Tensor.take_along_dim = take_along_dim


# no jvp rules written: forward AD derives these tangents from the vjps
from .._core.op import JVP_FROM_VJP, mark_unsupported  # noqa: E402

mark_unsupported("jvp", JVP_FROM_VJP, "index", "index_put", "gather", "scatter", "scatter_add",
                 "scatter_reduce", "index_select", "index_add", "index_copy", "index_fill",
                 "masked_fill", "masked_scatter", "masked_select", "take", "put")
