"""View operators: reshape, permute, expand, squeeze & co.

Their kernels return NumPy views, so results share memory and the version
counter with their base; derivatives are the inverse view (or a sum, for
expand).  Shape rules work on plain tuples, so symbolic sizes pass through.
"""
import numpy as np

from .._core.dispatch import overridable
from .._core import meta as _meta
from .._core.tensor import Size, _wrap_dim, host_tensor, real_array, storage_changing
from ._batching import _FULL_SLICE, _dims_rule, _index_view_rule, _move_to_front, _view_shape_rule
from ._batching_index import _backward_with_shape_rule
from ._helpers import Op, Tensor, _E, apply, handle_override, jvp_linear, type_name

__all__ = ["reshape", "permute", "transpose", "swapaxes", "swapdims", "t", "unsqueeze",
           "squeeze", "flatten", "unflatten", "movedim", "moveaxis", "broadcast_to",
           "adjoint", "view_as_real", "view_as_complex"]

_ndarray = np.ndarray
_SIZE_TYPES = (tuple, list, Size)


def _sizes(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list, Size)):
        args = tuple(args[0])
    # int subclasses stay (ember.compile's symbolic sizes are ints that know their origin)
    return tuple(a if isinstance(a, int) and type(a) is not bool else int(a) for a in args)


def infer_size(shape, numel):
    """Resolve one -1 in ``shape`` for a tensor of ``numel`` elements, with torch's errors."""
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s}")
            known *= s
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


# ---- view / reshape ---------------------------------------------------------------------
def _view_kernel(xp, x, shape):
    try:
        r = x.view()
        r.shape = shape  # raises instead of copying when strides are incompatible
        return r
    except AttributeError:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.") from None


def _view_shape(x, shape):
    return _meta.infer_view_shape(shape, _meta.numel(x.shape)), x.dtype


# views: the tangent is the same view of the input's tangent (reshape: the tangent may not be
# viewable, e.g. an expanded zero)
VIEW = Op("view", _view_kernel, lambda ctx, g, x, shape: g.reshape(ctx.in_meta[0][0]),
          save_inputs=False, view=True, shape=_view_shape, batch=_view_shape_rule,
          jvp=lambda out, ts, x, shape: None if ts[0] is None else ts[0].reshape(shape))
RESHAPE_COPY = Op("_reshape_copy", lambda xp, x, shape: xp.reshape(x, shape).copy(),
                  lambda ctx, g, x, shape: g.reshape(ctx.in_meta[0][0]), save_inputs=False,
                  shape=_view_shape, jvp=VIEW.jvp, batch=_view_shape_rule)


_VIEW_SIGNATURES = ("but expected one of:\n * (torch.dtype dtype)\n"
                    " * (tuple of ints size)\n")


def _view_arguments_error(shape, dtype, size):
    kwargs = [f"{k}={type(v).__name__ if k == 'size' else 'torch.dtype'}"
              for k, v in (("size", size), ("dtype", dtype)) if v is not None]
    # torch's listing: keywords alone each end in ", "; after positionals they are joined
    got = (", ".join([type(s).__name__ for s in shape] + kwargs) if shape
           else "".join(k + ", " for k in kwargs))
    return TypeError(f"view() received an invalid combination of arguments - got ({got}), "
                     f"{_VIEW_SIGNATURES}")


def _view(self, *shape, dtype=None, size=None):
    if dtype is not None or size is not None or not shape:
        # torch's two signatures: view(dtype) and view(size), either by keyword
        if shape or (dtype is not None and size is not None) or (dtype is None and size is None) \
                or (size is not None and not isinstance(size, (tuple, list, Size))):
            raise _view_arguments_error(shape, dtype, size)
        shape = (dtype,) if dtype is not None else (size,)
    if len(shape) == 1 and not isinstance(shape[0], (int, tuple, list, Size)) and \
            not isinstance(shape[0], np.integer):
        from .._core import dtype as _dt
        d = _dt.FROM_PYTHON.get(shape[0], shape[0])  # view(int) is view(int64), as torch's
        if isinstance(d, _dt.dtype):
            return _view_dtype(self, d)
    shape = infer_size(_sizes(shape), self.numel())
    return apply(VIEW, (self,), {"shape": shape})


def _view_dtype(self, dtype):
    old_size, new_size = self.element_size(), dtype.itemsize
    # vmap's per-example tensors (``_bdim``) have no strides of their own: the check is for
    # real tensors, the batch rule views the physical one
    if old_size != new_size and not hasattr(self, "_bdim"):
        _check_view_dtype(self, dtype, old_size, new_size)
    return _wrap_view_dtype(self, dtype)


def _check_view_dtype(self, dtype, old_size, new_size):
    # torch's conditions, in its order, for a view as an element of another size
    what = (f"to view {type_name(self.dtype)} as {type_name(dtype)} (different element "
            f"sizes)")
    if self.dim() == 0:
        raise RuntimeError(f"self.dim() cannot be 0 {what}")
    if self.stride(-1) != 1:
        raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {self.stride(-1)}")
    if new_size > old_size:
        ratio = new_size // old_size
        if self.size(-1) % ratio:
            raise RuntimeError(f"self.size(-1) must be divisible by {ratio} {what}, but got "
                               f"{self.size(-1)}")
        if self.storage_offset() % ratio:
            raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} {what}, "
                               f"but got {self.storage_offset()}")
        for d in range(self.dim() - 1):
            if self.stride(d) % ratio:
                raise RuntimeError(f"self.stride({d}) must be divisible by {ratio} {what}, "
                                   f"but got {self.stride(d)}")


def _wrap_view_dtype(self, dtype):
    VIEW_DTYPE = _view_dtype_op()
    return apply(VIEW_DTYPE, (self,), {"dtype": dtype.np})


_VD = []


def _view_dtype_shape(x, dtype):
    d = _meta.as_dtype(dtype)
    if d.itemsize == x.dtype.itemsize:
        return x.shape, d
    return x.shape[:-1] + (x.shape[-1] * x.dtype.itemsize // d.itemsize,), d


def _view_dtype_batch(op, args, bdims, params, batch_size):
    x, b = args[0], bdims[0]
    if _meta.as_dtype(params["dtype"]).itemsize == x.dtype.itemsize:
        return op(x, **params), b  # element for element: the batch dim stays where it is
    # another itemsize rescales the last dim, which must be contiguous: batch in front,
    # copied when moving it there broke that
    x = x.movedim(b, 0) if b else x
    if x.stride(-1) != 1:
        x = x.contiguous()
    return op(x, **params), 0


def _view_dtype_op():
    if not _VD:
        _VD.append(Op("view_dtype", lambda xp, x, dtype: x.view(dtype), None, view=True,
                      differentiable=False, shape=_view_dtype_shape, batch=_view_dtype_batch))
    return _VD[0]


@overridable
def reshape(input, shape):
    """A tensor with the same data and number of elements as ``input`` but ``shape``: a view
    when possible, otherwise a copy."""
    try:
        shape = infer_size(_sizes((shape,)), input.numel())
    except AttributeError:
        return handle_override(reshape, (input, shape), {})
    x = input._data
    # an input of a compiled or exported region compares by its symbolic sizes
    if shape == (input.__dict__.get("_sym_shape") or x.shape):
        return apply(VIEW, (input,), {"shape": shape})
    # an array not computed yet (ember.compile) has no strides to test: copy unless it is
    # known to be contiguous
    if x.flags.c_contiguous or (not hasattr(x, "__ember_array__") and _viewable(x, shape)):
        return apply(VIEW, (input,), {"shape": shape})
    return apply(RESHAPE_COPY, (input,), {"shape": shape})


def _viewable(x, shape):
    if type(x) is np.ndarray:
        # reshape(copy=False) answers without copying; assigning .shape of an array that
        # is no view of that shape copies the whole array first, then raises (4 ms a call
        # for pixel_shuffle's 8 MB)
        try:
            x.reshape(shape, copy=False)
            return True
        except ValueError:
            return False
    r = x.view()
    try:
        r.shape = shape
        return True
    except AttributeError:
        return False


Tensor.view = _view
Tensor.view_as = lambda self, other: _view(self, other.shape)
Tensor.reshape = lambda self, *shape: reshape(self, _sizes(shape))
Tensor.reshape_as = lambda self, other: reshape(self, other.shape)


# ---- permutations -----------------------------------------------------------------------
def _norm_dims(dims, ndim):
    dims = tuple(_wrap_dim(d, ndim) for d in dims)
    return dims


def _permute_vjp(ctx, g, x, dims):
    inv = [0] * len(dims)
    for i, d in enumerate(dims):
        inv[d] = i
    return apply(PERMUTE, (g,), {"dims": tuple(inv)})


def _permute_rule(op, args, bdims, params, batch_size):
    x = _move_to_front(args[0], bdims[0])
    return op(x, dims=(0,) + tuple(d + 1 for d in params["dims"])), 0


PERMUTE = Op("permute", lambda xp, x, dims: xp.transpose(x, dims), _permute_vjp,
             save_inputs=False, view=True, batch=_permute_rule,
             shape=lambda x, dims: (tuple(x.shape[d] for d in dims), x.dtype))
PERMUTE.jvp = jvp_linear(PERMUTE)


@overridable
def permute(input, dims):
    """A view of ``input`` with its dimensions permuted."""
    dims = _sizes((dims,))
    if len(dims) != input.dim():
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {input.dim()} is not equal to len(dims) = "
                           f"{len(dims)}")
    dims = _norm_dims(dims, input.dim())
    if len(set(dims)) != len(dims):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return apply(PERMUTE, (input,), {"dims": dims})


@overridable
def transpose(input, dim0, dim1):
    """A view of ``input`` with dimensions ``dim0`` and ``dim1`` swapped."""
    n = input.dim()
    if n == 0:
        _wrap_dim(dim0, 0), _wrap_dim(dim1, 0)
        return apply(PERMUTE, (input,), {"dims": ()})
    d0, d1 = _wrap_dim(dim0, n), _wrap_dim(dim1, n)
    dims = list(range(n))
    dims[d0], dims[d1] = dims[d1], dims[d0]
    return apply(PERMUTE, (input,), {"dims": tuple(dims)})


swapaxes = swapdims = transpose


@overridable
def t(input):
    """Transposes a tensor of at most 2 dimensions (0-D and 1-D are returned as is)."""
    if input.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{input.dim()}D")
    return transpose(input, 0, 1) if input.dim() == 2 else transpose(input, 0, 0)


@overridable
def movedim(input, source, destination):
    """Moves the dimension(s) of ``input`` at ``source`` to the position(s) in ``destination``."""
    n = input.dim()
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} "
                           f"dims) should contain the same number of dims as destination "
                           f"({list(dst)} dims)")
    src = _norm_dims(src, n)
    dst = _norm_dims(dst, n)
    order = [d for d in range(n) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return apply(PERMUTE, (input,), {"dims": tuple(order)})


moveaxis = movedim


@overridable
def adjoint(input):
    """Conjugate transpose of the last two dimensions."""
    return transpose(input, -2, -1).conj()


Tensor.permute = lambda self, *dims: permute(self, _sizes(dims))
Tensor.transpose = transpose
Tensor.swapaxes = Tensor.swapdims = transpose
Tensor.t = t
Tensor.movedim = Tensor.moveaxis = movedim
Tensor.adjoint = adjoint
Tensor.T = property(lambda self: permute(self, tuple(range(self.dim() - 1, -1, -1))))
Tensor.mT = property(lambda self: transpose(self, -2, -1))
Tensor.H = property(lambda self: t(self).conj())
Tensor.mH = property(adjoint)


def _transpose_(self, dim0, dim1):
    storage_changing(self)
    self._data = real_array(transpose(self, dim0, dim1)._data).view()
    return self


def _t_(self):
    storage_changing(self)
    self._data = real_array(t(self)._data)
    return self


Tensor.transpose_ = _transpose_
Tensor.t_ = _t_


# ---- squeeze / unsqueeze / flatten -----------------------------------------------------
@overridable
def unsqueeze(input, dim):
    """A view with a dimension of size one inserted at ``dim``."""
    n = input.dim() + 1
    d = _wrap_dim(dim, n)
    shape = input.shape[:d] + (1,) + input.shape[d:]
    return apply(VIEW, (input,), {"shape": shape})


@overridable
def squeeze(input, dim=None):
    """A view with the dimensions of size 1 removed (only ``dim``, if given; a tuple allowed)."""
    shp = input.shape
    n = len(shp)
    if dim is None:
        dims = {i for i, s in enumerate(shp) if s == 1}
    else:
        dims = {_wrap_dim(d, n) for d in ((dim,) if isinstance(dim, int) else dim)}
        dims = {d for d in dims if n and shp[d] == 1}
    shape = tuple(s for i, s in enumerate(shp) if i not in dims)
    return apply(VIEW, (input,), {"shape": shape})


@overridable
def flatten(input, start_dim=0, end_dim=-1):
    """Flattens dimensions ``start_dim`` .. ``end_dim`` into one."""
    shp = input.shape
    n = len(shp)
    if n == 0:
        return reshape(input, (1,))
    s, e = _wrap_dim(start_dim, n), _wrap_dim(end_dim, n)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    m = 1
    for v in shp[s:e + 1]:
        m *= v
    return reshape(input, shp[:s] + (m,) + shp[e + 1:])


@overridable
def unflatten(input, dim, sizes):
    """Expands dimension ``dim`` into ``sizes`` (one entry may be -1)."""
    shp = input.shape
    d = _wrap_dim(dim, len(shp))
    sizes = infer_size(tuple(sizes), shp[d])
    return reshape(input, shp[:d] + sizes + shp[d + 1:])


Tensor.unsqueeze = unsqueeze
Tensor.squeeze = squeeze
Tensor.flatten = flatten
Tensor.unflatten = unflatten
Tensor.ravel = lambda self: reshape(self, (-1,))


def _unsqueeze_(self, dim):
    storage_changing(self)
    self._data = real_array(unsqueeze(self, dim)._data)
    return self


def _squeeze_(self, dim=None):
    storage_changing(self)
    self._data = real_array(squeeze(self, dim)._data)
    return self


Tensor.unsqueeze_ = _unsqueeze_
Tensor.squeeze_ = _squeeze_


# ---- expand -----------------------------------------------------------------------------
def _expand_vjp(ctx, g, x, shape):
    return g.sum_to_size(ctx.in_meta[0][0])


def _expand_kernel(xp, x, shape):
    if shape == x.shape:
        return x.view()
    # a broadcast dim gets stride 0, new leading dims too; the rest keep their strides (a plain
    # loop only when a dim of size 1 may broadcast: a comprehension costs ~0.5 us here)
    xs = x.shape
    lead = len(shape) - len(xs)
    st = x.strides
    if 1 in xs:
        st = list(st)
        for i, n in enumerate(xs):
            if n == 1 and shape[lead + i] != 1:
                st[i] = 0
        st = tuple(st)
    if lead:
        st = (0,) * lead + st
    if type(x) is _ndarray:
        try:
            # the ndarray constructor over x's own memory: ~0.3 us, where as_strided builds an
            # __array_interface__ object and costs ~3 us.  It takes the memory of contiguous
            # arrays only (C or F order), whose strides start at their first element.  The view
            # is writable when x is, as torch's expanded tensors are (broadcast_to's are not).
            return _ndarray(shape, x.dtype, x, 0, st)
        except ValueError:
            pass  # not contiguous: as_strided reads the strides relative to x's data pointer
    return xp.lib.stride_tricks.as_strided(x, shape, st, writeable=True)


def _expand_rule(op, args, bdims, params, batch_size):
    x = _move_to_front(args[0], bdims[0])
    target = tuple(params["shape"])
    lnd = x.dim() - 1
    if lnd < len(target):
        x = x.reshape((x.shape[0],) + (1,) * (len(target) - lnd) + tuple(x.shape[1:]))
    return op(x, shape=(x.shape[0],) + target), 0


EXPAND = Op("expand", _expand_kernel, _expand_vjp, batch=_expand_rule,
            save_inputs=False, view=True, shape=lambda x, shape: (shape, x.dtype))
EXPAND.jvp = jvp_linear(EXPAND)


def _expand_shape(x_shape, sizes):
    n = len(sizes)
    if n < len(x_shape):
        raise RuntimeError(f"expand(ember.FloatTensor{{{list(x_shape)}}}, size={list(sizes)}): "
                           f"the number of sizes provided ({n}) must be greater or equal to the "
                           f"number of dimensions in the tensor ({len(x_shape)})")
    out = list(sizes)
    off = n - len(x_shape)
    # from the last dim to the first, so that the first error torch reports is ours too
    for i in range(n - 1, -1, -1):
        want = sizes[i]
        if i < off:
            if want < 0:
                raise RuntimeError(f"The expanded size of the tensor ({want}) isn't allowed in a "
                                   f"leading, non-existing dimension {i}")
            continue
        s = x_shape[i - off]
        if want == -1:
            out[i] = s
        elif s != want and s != 1:
            raise RuntimeError(f"The expanded size of the tensor ({want}) must match the existing "
                               f"size ({s}) at non-singleton dimension {i}.  Target sizes: "
                               f"{list(sizes)}.  Tensor sizes: {list(x_shape)}")
    return tuple(out)


def _plain_expand_shape(x_shape, sizes):
    """The expanded shape when every size is a plain int that needs no error; else None.

    The common call (a tuple or Size of ints, or ``expand_as``) costs one pass; anything
    else (int subclasses such as ember.compile's symbolic sizes, other types, bad sizes)
    takes the checked path, which converts and raises torch's errors.
    """
    lead = len(sizes) - len(x_shape)
    if lead < 0:
        return None
    out = list(sizes)
    for i in range(lead):
        w = out[i]
        if type(w) is not int or w < 0:
            return None
    for i, s in enumerate(x_shape, lead):
        w = out[i]
        if type(w) is not int:
            return None
        if w != s:
            if w == -1:
                out[i] = s
            elif s != 1 or w < 0:
                return None
    return tuple(out)


def _expand_sizes(sizes, packed):
    """``sizes`` as expand takes them: ints (or objects with ``__index__``), not floats or bools.

    ``packed``: whether they came as one sequence (torch words that error differently).
    """
    for pos, a in enumerate(sizes):
        if isinstance(a, (bool, float, np.bool_, np.floating)):
            what = type(a).__name__
            raise TypeError("expand(): argument 'size' (position 1) must be tuple of ints, " +
                            (f"but found element of type {what} at pos {pos}" if packed
                             else f"not {what}"))
    return _sizes(sizes)


def _expand(self, *sizes):
    packed = len(sizes) == 1 and type(sizes[0]) in _SIZE_TYPES
    if packed:
        sizes = sizes[0]
    elif not sizes:
        raise TypeError('expand() missing 1 required positional arguments: "size"')
    x_shape = self.shape
    shape = _plain_expand_shape(x_shape, sizes)
    if shape is None:
        shape = _expand_shape(x_shape, _expand_sizes(sizes, packed))
    return apply(EXPAND, (self,), {"shape": shape})


def _expand_as(self, other):
    x_shape = self.shape
    shape = _plain_expand_shape(x_shape, other.shape)
    if shape is None:
        shape = _expand_shape(x_shape, _expand_sizes(other.shape, True))
    return apply(EXPAND, (self,), {"shape": shape})


@overridable
def broadcast_to(input, size):
    """Broadcasts ``input`` to ``size`` (a view, like ``expand``)."""
    return _expand(input, tuple(size))


Tensor.expand = _expand
Tensor.expand_as = _expand_as
Tensor.broadcast_to = broadcast_to


# ---- complex <-> real views -------------------------------------------------------------
def _var_kernel(xp, x):
    if x.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    # a strided view of the real parts: works for 0-dim and non-contiguous tensors too
    re = x.real
    return xp.lib.stride_tricks.as_strided(re, x.shape + (2,), x.strides + (re.itemsize,))


def _vac_kernel(xp, x):
    if x.shape[-1:] != (2,):
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if x.dtype not in (np.float32, np.float64):
        raise RuntimeError(f"view_as_complex is only supported for float and double tensors, but "
                           f"got a tensor of scalar type: {x.dtype}")
    cdt = np.complex64 if x.dtype == np.float32 else np.complex128
    if x.size == 0:
        return xp.empty(x.shape[:-1], dtype=cdt)
    if x.strides[-1] != x.itemsize:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    return x.view(cdt)[..., 0]


def _view_complex_rule(op, args, bdims, params, batch_size):
    x = _move_to_front(args[0], bdims[0])
    if op.name == "view_as_complex" and x.dim() > 1 and x.stride(-1) != 1:
        x = x.contiguous()
    return op(x, **params), 0


VIEW_AS_REAL = Op("view_as_real", _var_kernel, lambda ctx, g, x: view_as_complex(g.contiguous()),
                  save_inputs=False, view=True, batch=_view_complex_rule,
                  shape=lambda x: (x.shape + (2,), x.dtype.to_real()))
VIEW_AS_COMPLEX = Op("view_as_complex", _vac_kernel, lambda ctx, g, x: view_as_real(g),
                     save_inputs=False, view=True, batch=_view_complex_rule,
                     shape=lambda x: (x.shape[:-1], x.dtype.to_complex()))


@overridable
def view_as_real(input):
    """A real view of a complex tensor, with a trailing dimension of size 2 (real, imag)."""
    return apply(VIEW_AS_REAL, (input,), _E)


@overridable
def view_as_complex(input):
    """A complex view of a real tensor whose last dimension has size 2."""
    return apply(VIEW_AS_COMPLEX, (input,), _E)




# ---- basic indexing: select / slice / narrow and the general basic-index view -----------
# A key is a tuple with one entry per indexed dim (plus None for new dims, no Ellipsis):
# an int, None, or a slice spelled (start, stop, step) so that params stay hashable.
_FULL = (None, None, None)


def key_np(key):
    return tuple(slice(*k) if type(k) is tuple else k for k in key) + (Ellipsis,)


def _index_view_kernel(xp, x, key):
    # the trailing Ellipsis keeps fully-indexed results 0-d arrays (views), not scalars
    return x[key_np(key)]


def _index_view_vjp(ctx, g, x, key):
    return apply(INDEX_VIEW_BACKWARD, (g,), {"shape": ctx.in_meta[0][0], "key": key})


def _index_view_backward_kernel(xp, g, shape, key):
    out = xp.zeros(shape, dtype=g.dtype)
    out[key_np(key)] = g
    return out


def _index_view_shape(x, key):
    return _meta.index_view_shape(x.shape, key), x.dtype


SELECT = Op("select", _index_view_kernel, _index_view_vjp, save_inputs=False, view=True,
            shape=_index_view_shape, batch=_index_view_rule)
SLICE = Op("slice", _index_view_kernel, _index_view_vjp, save_inputs=False, view=True,
           shape=_index_view_shape, batch=_index_view_rule)
INDEX_VIEW = Op("_index_view", _index_view_kernel, _index_view_vjp, save_inputs=False, view=True,
                shape=_index_view_shape, batch=_index_view_rule)
for _op in (SELECT, SLICE, INDEX_VIEW):
    _op.jvp = jvp_linear(_op)
def _index_view_backward_rule(op, args, bdims, params, batch_size):
    g = _move_to_front(args[0], bdims[0])
    return op(g, shape=(g.shape[0],) + tuple(params["shape"]),
              key=(_FULL_SLICE,) + tuple(params["key"])), 0


INDEX_VIEW_BACKWARD = Op("_index_view_backward", _index_view_backward_kernel,
                         lambda ctx, g, x, shape, key: apply(INDEX_VIEW, (g,), {"key": key}),
                         save_inputs=False, shape=lambda g, shape, key: (shape, g.dtype),
                         batch=_index_view_backward_rule)


@overridable
def select(input, dim, index):
    """Slices ``input`` along ``dim`` at ``index``: a view with that dimension removed."""
    shp = input.shape
    if not shp:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, len(shp))
    i = int(index)
    if not -shp[d] <= i < shp[d]:
        raise IndexError(f"select(): index {i} out of range for tensor of size {list(shp)} at "
                         f"dimension {dim}")
    return apply(SELECT, (input,), {"key": (_FULL,) * d + (i % shp[d],)})


@overridable
def narrow(input, dim, start, length):
    """A view of ``input`` narrowed to ``start .. start + length`` along ``dim``."""
    shp = input.shape
    if not shp:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, len(shp))
    start, length = int(start), int(length)
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if not -shp[d] <= start <= shp[d]:
        raise IndexError(f"start out of range (expected to be in range of [{-shp[d]}, "
                         f"{shp[d]}], but got {start})")
    if start < 0:
        start += shp[d]
    if start + length > shp[d]:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size "
                           f"({shp[d]}).")
    return apply(SLICE, (input,), {"key": (_FULL,) * d + ((start, start + length, 1),)})


Tensor.select = select
Tensor.narrow = narrow


# ---- diagonal / unfold / as_strided ------------------------------------------------------
def _strided(x, shape, strides, xp=np):
    return xp.lib.stride_tricks.as_strided(x, shape, strides, writeable=True)


def _diagonal_kernel(xp, x, offset, dim1, dim2):
    order = [d for d in range(x.ndim) if d not in (dim1, dim2)] + [dim1, dim2]
    y = x.transpose(order)
    y = y[..., :, offset:] if offset >= 0 else y[..., -offset:, :]
    n = max(min(y.shape[-2], y.shape[-1]), 0)
    return _strided(y, y.shape[:-2] + (n,), y.strides[:-2] + (y.strides[-2] + y.strides[-1],),
                    xp)


def _diagonal_backward_kernel(xp, g, shape, offset, dim1, dim2):
    out = xp.zeros(shape, dtype=g.dtype)
    _diagonal_kernel(xp, out, offset, dim1, dim2)[...] = g
    return out


def _diagonal_shape(x, offset, dim1, dim2):
    a, b = x.shape[dim1], x.shape[dim2]
    n = max(min(a, b - offset) if offset >= 0 else min(a + offset, b), 0)
    return tuple(s for d, s in enumerate(x.shape) if d not in (dim1, dim2)) + (n,), x.dtype


DIAGONAL = Op("diagonal", _diagonal_kernel,
              lambda ctx, g, x, **p: apply(DIAGONAL_BACKWARD, (g,),
                                           dict(p, shape=ctx.in_meta[0][0])),
              save_inputs=False, view=True, shape=_diagonal_shape, batch=_dims_rule)
DIAGONAL_BACKWARD = Op("_diagonal_backward", _diagonal_backward_kernel,
                       lambda ctx, g, x, shape, **p: apply(DIAGONAL, (g,), p),
                       save_inputs=False, shape=lambda g, shape, **p: (shape, g.dtype),
                       batch=_backward_with_shape_rule)


@overridable
def diagonal(input, offset=0, dim1=0, dim2=1):
    """A view of the diagonal (with ``offset``) of ``input`` over dims ``dim1`` and ``dim2``."""
    n = input.dim()
    d1, d2 = _wrap_dim(dim1, n), _wrap_dim(dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return apply(DIAGONAL, (input,), {"offset": int(offset), "dim1": d1, "dim2": d2})


@overridable
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Embeds the last dimension of ``input`` as diagonals of new (dim1, dim2) matrices."""
    shp = input.shape
    n = len(shp) + 1
    d1, d2 = _wrap_dim(dim1, n), _wrap_dim(dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    m = shp[-1] + abs(int(offset)) if shp else 1 + abs(int(offset))
    rest = list(shp[:-1])
    out = []
    for d in range(n):
        out.append(m if d in (d1, d2) else rest.pop(0))
    return apply(DIAGONAL_BACKWARD, (input if shp else input.reshape((1,)),),
                 {"shape": tuple(out), "offset": int(offset), "dim1": d1, "dim2": d2})


def _unfold_kernel(xp, x, dim, size, step):
    if x.ndim == 0:  # a 0-dim tensor unfolds into `size` (0 or 1) elements
        return _strided(x, (size,), (0,), xp)
    n = (x.shape[dim] - size) // step + 1
    shape = x.shape[:dim] + (n,) + x.shape[dim + 1:] + (size,)
    st = x.strides
    return _strided(x, shape, st[:dim] + (st[dim] * step,) + st[dim + 1:] + (st[dim],), xp)


def _unfold_backward_kernel(xp, g, shape, dim, size, step):
    out = xp.zeros(shape, dtype=g.dtype)
    if not shape:
        return g.sum(dtype=g.dtype).reshape(())
    win = _unfold_kernel(xp, out, dim, size, step)
    for j in range(size):  # windows may overlap: add one window offset at a time
        win[..., j] += g[..., j]
    return out


def _unfold_shape(x, dim, size, step):
    if not x.shape:
        return (size,), x.dtype
    n = (x.shape[dim] - size) // step + 1
    return x.shape[:dim] + (n,) + x.shape[dim + 1:] + (size,), x.dtype


UNFOLD = Op("unfold", _unfold_kernel,
            lambda ctx, g, x, **p: apply(UNFOLD_BACKWARD, (g,), dict(p, shape=ctx.in_meta[0][0])),
            save_inputs=False, view=True, shape=_unfold_shape, batch=_dims_rule)
UNFOLD_BACKWARD = Op("_unfold_backward", _unfold_backward_kernel,
                     lambda ctx, g, x, shape, **p: apply(UNFOLD, (g,), p), save_inputs=False,
                     shape=lambda g, shape, **p: (shape, g.dtype), batch=_backward_with_shape_rule)


def _unfold(self, dimension, size, step):
    """A view of all slices of ``size`` elements along ``dimension``, ``step`` apart."""
    shp = self.shape
    d = _wrap_dim(dimension, len(shp))
    n = shp[d] if shp else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    return apply(UNFOLD, (self,), {"dim": d, "size": int(size), "step": int(step)})


Tensor.unfold = _unfold


def _root_array(x):
    while isinstance(x.base, np.ndarray):
        x = x.base
    return x


def _extent(size, stride):
    """Elements spanned by a (size, stride) geometry from its first element (0 if empty)."""
    if not all(size):
        return 0
    return sum((n - 1) * s for n, s in zip(size, stride)) + 1


def _as_strided_kernel(xp, x, size, stride, storage_offset, rel, in_stride=None):
    # ``rel`` places the view relative to x's first element, so the kernel needs no tensor
    # metadata (under vmap it runs on the physical batch, each example at its own start)
    root = _root_array(x)
    it = x.itemsize
    start = (x.__array_interface__["data"][0] - root.__array_interface__["data"][0]) // it + rel
    need = _extent(size, stride)
    if need and (start < 0 or start + need > root.size):
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                           f"offset {storage_offset}, and itemsize {it} requiring a storage size "
                           f"of {(storage_offset + need) * it} are out of bounds for storage of "
                           f"size {root.nbytes}")
    flat = _strided(root, (root.size,), (it,))
    return _strided(flat[min(max(start, 0), root.size):], size, tuple(s * it for s in stride))


def _positions(size, stride, start):
    pos = np.full(size, start, dtype=np.int64)
    for k, (n, s) in enumerate(zip(size, stride)):
        pos = pos + (np.arange(n, dtype=np.int64) * s).reshape((n,) + (1,) * (len(size) - k - 1))
    return pos


def _as_strided_vjp(ctx, g, x, size, stride, storage_offset, rel, in_stride=None):
    # torch's as_strided_backward: scatter-add the gradient into a zero buffer laid out like
    # the storage both geometries address, then read the input's elements back from it
    # (split evenly among the input elements that alias one storage element)
    from .._core.tensor import wrap
    shape = ctx.in_meta[0][0]
    if in_stride is None:
        in_stride = tuple(int(np.prod(shape[k + 1:])) for k in range(len(shape)))
    in_pos = _positions(shape, in_stride, 0)
    out_pos = _positions(size, stride, rel)
    if not in_pos.size:
        return host_tensor(np.zeros(shape, dtype=g.dtype.np), g)
    lo = min(in_pos.min(), out_pos.min()) if out_pos.size else in_pos.min()
    hi = max(in_pos.max(), out_pos.max()) if out_pos.size else in_pos.max()
    buf = host_tensor(np.zeros(int(hi - lo + 1), dtype=g.dtype.np), g)
    if out_pos.size:
        buf = buf.put(host_tensor(out_pos - lo, g), g, accumulate=True)
    gi = buf.take(host_tensor(in_pos - lo, g))
    count = np.bincount((in_pos - lo).reshape(-1))[in_pos - lo]
    if (count > 1).any():
        gi = gi / host_tensor(count.astype(g.dtype.np), g)
    return gi


def _as_strided_rule(op, args, bdims, params, batch_size):
    x = _move_to_front(args[0], bdims[0]).contiguous()
    n = int(np.prod(x.shape[1:]))
    # the batched input is made contiguous, so any input-stride parameter is dropped (None
    # means contiguous); the other params pass through unchanged
    rest = {k: v for k, v in params.items() if k not in ("size", "stride", "in_stride")}
    return op(x, size=(batch_size,) + tuple(params["size"]),
              stride=(n,) + tuple(params["stride"]), **rest), 0


AS_STRIDED = Op("as_strided", _as_strided_kernel, _as_strided_vjp, save_inputs=False,
                view=True, shape=lambda x, size, stride, *a, **k: (tuple(size), x.dtype),
                batch=_as_strided_rule)


@overridable
def as_strided(input, size, stride, storage_offset=None):
    """A view of ``input``'s storage with the given ``size``, ``stride`` and offset."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {list(stride)}")
    own = input.storage_offset()
    off = own if storage_offset is None else int(storage_offset)
    p = {"size": size, "stride": stride, "storage_offset": off, "rel": off - own}
    # the backward needs the input's layout; a batched input (vmap) is made contiguous by
    # its batching rule, and None stands for contiguous
    if getattr(input, "_level", None) is None and not input.is_contiguous():
        p["in_stride"] = input.stride()
    return apply(AS_STRIDED, (input,), p)


Tensor.as_strided = as_strided
Tensor.diagonal = diagonal
Tensor.diag_embed = diag_embed
__all__ += ["select", "narrow", "diagonal", "diag_embed", "as_strided"]


# no jvp rules written: forward AD derives these tangents from the vjps
from .._core.op import JVP_FROM_VJP, mark_unsupported  # noqa: E402

mark_unsupported("jvp", JVP_FROM_VJP, "view_as_real", "view_as_complex", "_index_view_backward",
                 "diagonal", "_diagonal_backward", "unfold", "_unfold_backward", "as_strided")
