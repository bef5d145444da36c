"""The ``*_scatter`` operators (the inverse of a view: ``input`` with the view's
elements replaced by ``src``), ``fill_diagonal_`` and ``resize_``/``resize_as_``.

The scatters write ``src`` into the matching view of a copy of ``input``: the
in-place copy into a view is recorded by autograd like any other, so gradients flow
to ``input`` (zero where replaced) and to ``src`` (the view of the output gradient).
"""
import numpy as np

from .._core.deterministic import fill_uninitialized
from .._core.meta_device import MetaArray
from .._core.storage import _root as _storage_root
from .._core.tensor import Tensor, wrap
from ._helpers import overridable

__all__ = ["select_scatter", "slice_scatter", "diagonal_scatter", "as_strided_scatter"]


def _check_src(view, src, name):
    if tuple(view.shape) != tuple(src.shape):
        raise RuntimeError(f"{name}: expected src to have a size equal to the slice of self. "
                           f"src size = {list(src.shape)}, slice size = {list(view.shape)}")


def _scatter_into(input, src, view_fn, name):
    out = input.clone()
    view = view_fn(out)
    _check_src(view, src, name)
    view.copy_(src)
    return out


@overridable
def select_scatter(input, src, dim, index):
    """Embeds ``src`` into ``input`` at the given index of dimension ``dim``."""
    return _scatter_into(input, src, lambda t: t.select(dim, index), "select_scatter")


@overridable
def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """Embeds ``src`` into ``input`` at the slice ``start:end:step`` of dimension ``dim``."""
    def view(t):
        idx = [slice(None)] * t.dim()
        idx[dim] = slice(start, end, step)
        return t[tuple(idx)]
    return _scatter_into(input, src, view, "slice_scatter")


@overridable
def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """Embeds ``src`` into the diagonal of ``input`` (``offset``, ``dim1``, ``dim2`` as for
    ``diagonal``)."""
    return _scatter_into(input, src, lambda t: t.diagonal(offset, dim1, dim2),
                         "diagonal_scatter")


@overridable
def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """Embeds ``src`` into the elements of ``input`` that ``as_strided(size, stride,
    storage_offset)`` selects."""
    return _scatter_into(input.contiguous(), src,
                         lambda t: t.as_strided(size, stride, storage_offset),
                         "as_strided_scatter")


for _n in __all__:
    setattr(Tensor, _n, globals()[_n])
del _n


def _fill_diagonal_(self, fill_value, wrap=False):
    """Fills the main diagonal of a tensor of at least 2 dimensions (all equal beyond 2-D)
    in place; ``wrap`` continues the diagonal below a tall matrix every ``cols + 1`` rows."""
    nd = self.dim()
    if nd < 2:
        raise RuntimeError("dimensions must larger than 1")
    shape = tuple(self.shape)
    if nd > 2 and len(set(shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    if nd == 2:
        rows, cols = shape
        limit = rows * cols if wrap and rows > cols + 1 else min(rows, cols) * cols
        pos = np.arange(0, limit, cols + 1)
        idx = (wrap_i(pos // cols), wrap_i(pos % cols))
    else:
        d = np.arange(shape[0])
        idx = tuple(wrap_i(d) for _ in range(nd))
    self[idx] = fill_value
    return self


def wrap_i(a):
    return wrap(np.ascontiguousarray(a, dtype=np.int64))


def _resize_(self, *sizes, memory_format=None):
    """Resizes ``self`` to ``sizes`` in place, keeping its elements in order; new elements
    are uninitialised (as torch's)."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(sizes)}: "
                           f"{list(sizes)}")
    old = self._data
    n = int(np.prod(sizes)) if sizes else 1
    if type(old) is MetaArray:
        return _resize_meta(self, tuple(sizes), n)
    root = _storage_root(old)
    if self._base is None and old.flags.c_contiguous and root.dtype == old.dtype and \
            root.flags.c_contiguous and n <= root.size and \
            old.__array_interface__["data"][0] == root.__array_interface__["data"][0]:
        # the storage holds the new size: torch keeps it, so the storage, its nbytes and
        # the tensor's views are unchanged (a view resized here becomes a tensor of its own)
        self._data = root.reshape(-1)[:n].reshape(sizes)
        return self
    if n == old.size:
        new = old.reshape(sizes) if old.flags.c_contiguous else \
            np.ascontiguousarray(old).reshape(sizes)
    else:
        new = np.empty(n, dtype=old.dtype)
        k = min(n, old.size)
        fill_uninitialized(new[k:])
        new[:k] = old.reshape(-1)[:k]
        new = new.reshape(sizes)
    self._data = new
    self._base = None
    self._view_chain = None
    return self


def _resize_meta(self, sizes, n):
    """A meta tensor's resize, as torch's: the same storage (grown when the new size needs
    more), the same storage offset, contiguous strides unless the shape is unchanged."""
    old = self._data
    if sizes == tuple(old.shape):
        return self
    storage = self.untyped_storage()
    new = MetaArray(sizes, old.dtype, offset=self.storage_offset())
    storage.resize_(max(storage.nbytes(), (new.offset + n) * old.itemsize))
    new.storage = storage
    self._data = new  # a view stays one (its base holds the storage), as in torch
    self._view_chain = None
    return self


def _resize_as_(self, the_template, *, memory_format=None):
    return _resize_(self, tuple(the_template.shape))


Tensor.fill_diagonal_ = _fill_diagonal_
Tensor.resize_ = _resize_
Tensor.resize_as_ = _resize_as_
