"""torch's tensor rebuild functions, re-implemented with validation.

A checkpoint describes each tensor as (storage, offset, size, stride).  A hostile
file can make those anything, so every one is checked with exact (Python
integer) arithmetic before a view is built: sizes and strides non-negative, the
element count and the extent representable in int64, and the highest element the
view can touch inside the storage.  The errors are torch's ("Storage size
calculation overflowed", "setStorage: ... out of bounds for storage of size ...").

Tensors rebuilt from one storage share its memory and one version counter.  The
storage is owned by the tensors that view it (through their ``_base``), so it is
freed with them; nothing is kept after ``load`` returns.
"""
import pickle

import numpy as np

from .._core import dtype as _dt
from .._core.tensor import Tensor, wrap
from ._writer import _INTERNAL_ATTRS

_INT64_MAX = (1 << 63) - 1


class LoadedStorage:
    """One storage read from an archive: its bytes plus the dtype its type declared
    (``None`` for ``UntypedStorage``), and the tensors that own each dtype view of it."""
    __slots__ = ("array", "dtype", "key", "location", "big_endian", "quantized", "_owners",
                 "_vc")

    def __init__(self, array, dtype, key, location, big_endian=False, quantized=False):
        self.array, self.dtype, self.key, self.location = array, dtype, key, location
        self.big_endian = big_endian
        self.quantized = quantized  # a QInt8Storage & co.: only _rebuild_qtensor reads it
        self._owners = {}
        self._vc = [0]

    @property
    def nbytes(self):
        return self.array.nbytes

    def owner(self, dtype):
        """The tensor viewing the whole storage as ``dtype`` (created once per dtype)."""
        owner = self._owners.get(dtype.name)
        if owner is None:
            owner = wrap(self._typed_array(dtype))
            owner._vc = self._vc
            self._owners[dtype.name] = owner
        return owner

    def _typed_array(self, dtype):
        arr = self.array
        if self.dtype is dtype and not self.big_endian:
            return arr
        raw = arr.reshape(-1).view(np.uint8)
        isz = dtype.itemsize
        if raw.size % isz:
            raise RuntimeError(f"a storage of {raw.size} bytes cannot hold elements of {dtype} "
                               f"({isz} bytes each)")
        if self.big_endian and isz > 1:
            return raw.view(np.dtype(dtype.np).newbyteorder(">")).astype(dtype.np)
        return raw.view(dtype.np)


def _as_int_tuple(value, what):
    if not isinstance(value, (tuple, list)) or not all(type(v) is int for v in value):
        raise RuntimeError(f"invalid tensor {what} in checkpoint: expected a tuple of ints, got "
                           f"{value!r:.200}")
    return tuple(value)


def check_geometry(storage_numel, itemsize, offset, size, stride):
    """Raises torch's errors unless a (offset, size, stride) view fits in the storage."""
    size = _as_int_tuple(size, "size")
    stride = _as_int_tuple(stride, "stride")
    if type(offset) is not int:
        raise RuntimeError(f"invalid storage offset {offset!r:.100} in checkpoint")
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: size {list(size)}, "
                           f"stride {list(stride)}")
    if any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{min(size)}: {list(size)}")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {list(stride)}")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    numel = 1
    for s in size:
        numel *= s
    if numel > _INT64_MAX:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and "
                           f"strides={list(stride)}")
    if numel == 0:
        needed = 0
    else:
        needed = offset + 1 + sum((s - 1) * st for s, st in zip(size, stride))
    if needed * itemsize > _INT64_MAX:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and "
                           f"strides={list(stride)}")
    if needed > storage_numel:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, "
            f"and itemsize {itemsize} requiring a storage size of {needed * itemsize} are out "
            f"of bounds for storage of size {storage_numel * itemsize}")
    return size, stride


def _view(storage, dtype, offset, size, stride):
    if not isinstance(storage, LoadedStorage):
        raise pickle.UnpicklingError(f"expected a storage to rebuild a tensor from, got "
                                     f"{type(storage).__name__}")
    if not isinstance(dtype, _dt.dtype):
        raise pickle.UnpicklingError(f"expected a dtype, got {dtype!r:.100}")
    owner = storage.owner(dtype)
    arr = owner._data
    size, stride = check_geometry(arr.size, arr.itemsize, offset, size, stride)
    isz = arr.itemsize
    base = arr[offset:] if offset < arr.size else arr[:0]
    strides = tuple(s * isz for s in stride)
    if arr.dtype.isbuiltin != 1:  # ml_dtypes (bfloat16, float8) have no array-interface typestr
        view = np.lib.stride_tricks.as_strided(base.view(f"V{isz}"), shape=size,
                                               strides=strides).view(arr.dtype)
    else:
        view = np.lib.stride_tricks.as_strided(base, shape=size, strides=strides)
    t = wrap(view)
    t._base = owner
    t._vc = owner._vc
    return t


def _finish(t, requires_grad, backward_hooks, metadata=None):
    if type(requires_grad) is not bool:
        raise pickle.UnpicklingError(f"requires_grad must be a bool, got {requires_grad!r:.50}")
    if backward_hooks:
        raise pickle.UnpicklingError("checkpoints with backward hooks cannot be loaded with "
                                     "weights_only=True")
    if metadata:
        if not isinstance(metadata, dict):
            raise pickle.UnpicklingError(f"tensor metadata must be a dict, got {metadata!r:.80}")
        t = _apply_bits(t, metadata)
    if requires_grad:
        if not (t.dtype.is_floating_point or t.dtype.is_complex):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        t._requires_grad = True
    return t


def _apply_bits(t, metadata):
    """torch's lazy conj/neg bits: the storage holds the un-negated, un-conjugated values."""
    arr = t._data
    if metadata.get("conj"):
        if not t.dtype.is_complex:
            raise RuntimeError(f"a tensor of dtype {t.dtype} cannot carry the conjugate bit")
        arr = np.conj(arr)
    if metadata.get("neg"):
        arr = np.negative(arr)
    return t if arr is t._data else wrap(np.ascontiguousarray(arr))


def rebuild_tensor(storage, storage_offset, size, stride):
    return _view(storage, _declared_dtype(storage), storage_offset, size, stride)


def rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False,
                      backward_hooks=None, metadata=None):
    t = _view(storage, _declared_dtype(storage), storage_offset, size, stride)
    return _finish(t, requires_grad, backward_hooks, metadata)


def rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                      dtype, metadata=None):
    t = _view(storage, dtype, storage_offset, size, stride)
    return _finish(t, requires_grad, backward_hooks, metadata)


def _declared_dtype(storage):
    if getattr(storage, "quantized", False):
        raise RuntimeError("This checkpoint rebuilds a plain tensor from a quantized storage "
                           "(QInt8Storage & co. hold quantized tensors' values)")
    dtype = getattr(storage, "dtype", None)
    if dtype is None:
        raise pickle.UnpicklingError("an untyped storage needs _rebuild_tensor_v3, which names "
                                     "the dtype")
    return dtype


def rebuild_parameter(data, requires_grad, backward_hooks=None, *unused):
    from ..nn.parameter import Parameter
    if not isinstance(data, Tensor):
        raise pickle.UnpicklingError(f"a Parameter is rebuilt from a tensor, got "
                                     f"{type(data).__name__}")
    if type(requires_grad) is not bool:
        raise pickle.UnpicklingError(f"requires_grad must be a bool, got {requires_grad!r:.50}")
    if backward_hooks:
        raise pickle.UnpicklingError("checkpoints with backward hooks cannot be loaded with "
                                     "weights_only=True")
    return Parameter(data, requires_grad)


def rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    p = rebuild_parameter(data, requires_grad, backward_hooks)
    if state:
        set_tensor_state(p, state)
    return p


def rebuild_from_type_v2(func, new_type, args, state):
    if func not in _TENSOR_REBUILDERS:
        raise pickle.UnpicklingError(f"_rebuild_from_type_v2 got an unexpected function {func!r}")
    if type(args) is not tuple:
        raise pickle.UnpicklingError("_rebuild_from_type_v2 arguments must be a tuple")
    t = func(*args)
    if not (isinstance(new_type, type) and issubclass(new_type, Tensor)):
        raise pickle.UnpicklingError(f"expected a Tensor type, got {new_type!r:.80}")
    if type(t) is not new_type:
        t.__class__ = new_type
    if state:
        set_tensor_state(t, state)
    return t


def set_tensor_state(t, state):
    """Sets the user attributes a tensor was saved with; refuses ember's internals."""
    slots = None
    if isinstance(state, tuple) and len(state) == 2:
        state, slots = state
    for part in (state, slots):
        if not part:
            continue
        if not isinstance(part, dict):
            raise pickle.UnpicklingError(f"tensor state must be a dict, got {part!r:.80}")
        for k, v in part.items():
            if type(k) is not str:
                raise pickle.UnpicklingError(f"tensor attribute names must be str, got {k!r:.80}")
            if k in _INTERNAL_ATTRS or k.startswith("__") or hasattr(Tensor, k):
                raise pickle.UnpicklingError(
                    f"refusing to set the tensor attribute {k!r} from a checkpoint: it is part "
                    f"of the Tensor itself, not user state")
            t.__dict__[k] = v


def rebuild_device_tensor_from_cpu_tensor(data, dtype, device, requires_grad):
    if not isinstance(data, Tensor):
        raise pickle.UnpicklingError("expected a tensor")
    t = data.to(dtype=dtype)
    t = wrap(t._data)
    return _finish(t, requires_grad, None)


def rebuild_device_tensor_from_numpy(data, dtype, device, requires_grad):
    if not isinstance(data, np.ndarray):
        raise pickle.UnpicklingError("expected a numpy array")
    t = wrap(np.array(data, dtype=dtype.np, copy=True))
    return _finish(t, requires_grad, None)


def rebuild_meta_tensor_no_storage(dtype, size, stride, requires_grad):
    """A meta tensor as torch saves one: its dtype, sizes and strides (no data, no offset)."""
    if not isinstance(dtype, _dt.dtype):
        raise pickle.UnpicklingError(f"expected a dtype, got {dtype!r:.80}")
    for name, v in (("size", size), ("stride", stride)):
        if not (isinstance(v, tuple) and all(type(i) is int for i in v)):
            raise pickle.UnpicklingError(f"meta tensor {name} must be a tuple of ints, got "
                                         f"{v!r:.80}")
    from ..ops.creation import empty_strided
    t = empty_strided(size, stride, dtype=dtype, device="meta")
    return _finish(t, requires_grad, None)


def _unsupported(kind):
    def rebuild(*args, **kwargs):
        raise RuntimeError(f"This checkpoint contains {kind}, which ember cannot load yet. "
                           f"Convert them to dense/plain tensors with torch before saving.")
    rebuild.__name__ = f"rebuild_{kind.replace(' ', '_')}"
    return rebuild


_TENSOR_REBUILDERS = {rebuild_tensor, rebuild_tensor_v2, rebuild_tensor_v3, rebuild_parameter,
                      rebuild_parameter_with_state, rebuild_device_tensor_from_cpu_tensor,
                      rebuild_device_tensor_from_numpy, rebuild_meta_tensor_no_storage}

# torch._utils names -> ember's implementations (the names torch's weights-only loader allows)
TORCH_UTILS = {
    "_rebuild_tensor": rebuild_tensor,
    "_rebuild_tensor_v2": rebuild_tensor_v2,
    "_rebuild_tensor_v3": rebuild_tensor_v3,
    "_rebuild_parameter": rebuild_parameter,
    "_rebuild_parameter_with_state": rebuild_parameter_with_state,
    "_rebuild_device_tensor_from_cpu_tensor": rebuild_device_tensor_from_cpu_tensor,
    "_rebuild_device_tensor_from_numpy": rebuild_device_tensor_from_numpy,
    "_rebuild_qtensor": _unsupported("quantized tensors"),
    "_rebuild_sparse_tensor": _unsupported("sparse tensors"),
    "_rebuild_nested_tensor": _unsupported("nested tensors"),
    "_rebuild_wrapper_subclass": _unsupported("tensor wrapper subclasses"),
    "_rebuild_meta_tensor_no_storage": rebuild_meta_tensor_no_storage,
}
