"""Tensor methods of torch's legacy and static-shape surface: element-wise Python
callables (``apply_``, ``map_``, ``map2_``), the deprecated out-of-place ``resize``/
``resize_as``, ``nonzero_static``, ``new_empty_strided``, ``is_set_to``, ``storage_type``
and the named-tensor ``name`` attribute (ember tensors are unnamed)."""
import warnings

import numpy as np

from .._core.dispatch import overridable
from .._core.tensor import Tensor, _version_of, wrap

__all__ = ["nonzero_static"]


def _check_callable_target(t, what):
    if t.requires_grad:
        raise RuntimeError(f"Can't call {what}() on Variable that requires grad. Use "
                           f"var.detach().{what}() instead.")


def _apply_elementwise(self, what, fn, others):
    _check_callable_target(self, what)
    arrays = [np.broadcast_to(np.asarray(o._data), self.shape) for o in others] \
        if others else []
    out = self._data
    flat = [a.reshape(-1) for a in arrays]
    it = np.nditer(out, flags=["multi_index", "refs_ok"], op_flags=["readwrite"])
    for i, cell in enumerate(it):
        args = [cell.item()] + [a[i].item() for a in flat]
        cell[...] = fn(*args)
    _version_of(self)[0] += 1  # an in-place write, as autograd's saved-tensor check sees it
    return self


def _broadcast_for_map(self, others):
    for o in others:
        try:
            np.broadcast_to(np.empty(o.shape, dtype=np.bool_), self.shape)
        except ValueError:
            raise RuntimeError(f"The expanded size of the tensor ({self.shape[-1]}) must match "
                               f"the existing size ({o.shape[-1]}) at non-singleton dimension "
                               f"{self.dim() - 1}.  Target sizes: {list(self.shape)}.  Tensor "
                               f"sizes: {list(o.shape)}") from None
    # map_ reads the other tensors in row-major order of self
    return [o.expand(self.shape).contiguous() for o in others]


def apply_(self, callable):
    """Replaces every element ``v`` by ``callable(v)`` (a Python function; slow, CPU only)."""
    return _apply_elementwise(self, "apply_", callable, [])


def map_(self, tensor, callable):
    """``self[i] = callable(self[i], tensor[i])`` element by element (``tensor`` broadcast)."""
    return _apply_elementwise(self, "map_", callable, _broadcast_for_map(self, [tensor]))


def map2_(self, x, y, callable):
    """``self[i] = callable(self[i], x[i], y[i])`` element by element."""
    return _apply_elementwise(self, "map2_", callable, _broadcast_for_map(self, [x, y]))


def resize(self, *sizes):
    """Deprecated out-of-place resize: a tensor of the same elements in shape ``sizes``."""
    warnings.warn("non-inplace resize is deprecated", stacklevel=2)
    if len(sizes) == 1 and isinstance(sizes[0], (list, tuple)):
        sizes = tuple(sizes[0])
    n = int(np.prod(sizes))
    if n != self.numel():
        raise RuntimeError(f"requested resize to {'x'.join(map(str, sizes))} ({n} elements in "
                           f"total), but the given tensor has a size of "
                           f"{'x'.join(map(str, self.shape))} ({self.numel()} elements). "
                           f"autograd's resize can only change the shape of a given tensor, "
                           f"while preserving the number of elements. ")
    return self.contiguous().view(*sizes)


def resize_as(self, tensor):
    warnings.warn("non-inplace resize_as is deprecated", stacklevel=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return resize(self, *tensor.shape)


@overridable
def nonzero_static(input, *, size, fill_value=-1):
    """The indices of the non-zero elements as ``nonzero`` gives them, truncated or padded
    with ``fill_value`` to exactly ``size`` rows (a static output shape)."""
    if not isinstance(size, int) or size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    idx = np.argwhere(np.asarray(input._data))[:size]
    out = np.full((size, input.dim()), fill_value, dtype=np.int64)
    out[:idx.shape[0]] = idx
    return wrap(out)


def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False,
                      layout=None, pin_memory=False):
    from .creation import empty_strided
    return empty_strided(size, stride, dtype=dtype or self.dtype,
                         device=device or self.device, requires_grad=requires_grad)


def is_set_to(self, tensor):
    """True if both tensors are the same window on the same memory (storage, offset, sizes
    and strides)."""
    a, b = np.asarray(self._data), np.asarray(tensor._data)
    return a.__array_interface__["data"][0] == b.__array_interface__["data"][0] and \
        a.shape == b.shape and a.strides == b.strides


def storage_type(self):
    from .._core.storage import LEGACY_STORAGES, _LEGACY_NAME, _warn_typed
    _warn_typed()  # a TypedStorage class, deprecated as torch's
    return LEGACY_STORAGES[_LEGACY_NAME[self.dtype]]


Tensor.apply_ = apply_
Tensor.map_ = map_
Tensor.map2_ = map2_
Tensor.resize = resize
Tensor.resize_as = resize_as
Tensor.nonzero_static = nonzero_static
Tensor.new_empty_strided = new_empty_strided
Tensor.is_set_to = is_set_to
Tensor.storage_type = storage_type
Tensor.name = None  # torch's named-tensor attribute: None on an unnamed tensor
