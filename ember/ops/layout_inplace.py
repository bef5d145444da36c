"""Operations that change a tensor's layout or storage in place, and the factory that picks
a layout: ``Tensor.set_``, ``as_strided_`` (``Tensor.as_strided_``), ``torch.resize_as_``
and ``torch.empty_permuted``."""
import numpy as np

from .._core.dispatch import overridable
from .._core.inplace import _check_inplace_allowed
from .._core.storage import TypedStorage, UntypedStorage, _root
from .._core.tensor import Tensor, _version_of, wrap
from .creation import empty
from .views import as_strided as _as_strided

__all__ = ["as_strided_", "resize_as_", "empty_permuted"]


def _point_at(self, array, version_of=None, root=None):
    """``self`` now views ``array``; its offset is read against the array owning the memory
    (``root``, found from ``array`` by default), which stands as its (plain, history-free)
    base.  ``version_of``: the tensor whose version counter it shares."""
    root = _root(array) if root is None else root
    self._data = array
    self._base = None if root is array else wrap(root)
    self._view_chain = None
    self._vc = None if version_of is None else _version_of(version_of)


def _set_(self, source=None, storage_offset=0, size=None, stride=None):
    """Sets the underlying storage, size, and strides.  With a tensor ``source``, ``self``
    shares its storage, size and strides; with a storage, ``self`` views it from
    ``storage_offset`` with ``size`` and ``stride`` (contiguous by default); with nothing,
    ``self`` becomes an empty tensor."""
    _check_inplace_allowed(self)
    if source is None:
        _point_at(self, np.empty((0,), dtype=self.dtype.np))
        return self
    if isinstance(source, Tensor):
        if source.dtype != self.dtype:
            raise RuntimeError(f"Could not set tensor of type {_c_name(source.dtype)} to a "
                               f"tensor of type {_c_name(self.dtype)}")
        if size is None:
            _point_at(self, source._data, source)
            return self
        source = source.untyped_storage()
    if isinstance(source, TypedStorage):
        if source.dtype != self.dtype:
            raise RuntimeError(f"Expected a Storage of type {self.dtype} or an UntypedStorage, "
                               f"but got type {source.dtype} for argument 1 'storage'")
        source = source.untyped()
    if not isinstance(source, UntypedStorage):
        raise TypeError(f"set_(): argument 'source' must be Tensor or Storage, not "
                        f"{type(source).__name__}")
    elements = source._bytes.view(self.dtype.np) if source._bytes.size % \
        self.dtype.itemsize == 0 else source._bytes[:source._bytes.size - source._bytes.size %
                                                    self.dtype.itemsize].view(self.dtype.np)
    size = tuple(elements.shape) if size is None else tuple(int(s) for s in size)
    if stride is None:
        stride = tuple(int(np.prod(size[i + 1:], dtype=np.int64)) for i in range(len(size)))
    needed = 1 + sum((s - 1) * st for s, st in zip(size, stride)) if all(size) else 0
    if storage_offset + needed > elements.size:
        # torch grows the storage; ember's storages are windows on arrays other tensors view
        item = self.dtype.itemsize
        raise RuntimeError(f"setStorage (ember cannot grow a storage in place): sizes "
                           f"{list(size)}, strides {list(stride)}, storage offset "
                           f"{storage_offset}, and itemsize {item} requiring a storage size of "
                           f"{(storage_offset + needed) * item} are out of bounds for storage "
                           f"of size {elements.size * item}")
    item = self.dtype.itemsize
    view = np.lib.stride_tricks.as_strided(elements[storage_offset:], size,
                                           tuple(st * item for st in stride))
    _point_at(self, view, root=_root(elements))
    return self


def _c_name(dt):
    return {"float32": "float", "float64": "double", "int64": "long int", "int32": "int",
            "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "bool": "bool", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"
            }.get(dt.name, dt.name)


@overridable
def as_strided_(input, size, stride, storage_offset=None):
    """In-place version of ``as_strided``: ``input`` becomes the view of its storage with the
    given ``size``, ``stride`` and offset."""
    _check_inplace_allowed(input)
    root = _root((input._base if input._base is not None else input)._data)
    offset = input.storage_offset() if storage_offset is None else storage_offset
    r = _as_strided(wrap(root), size, stride, offset)
    _point_at(input, r._data, input, root)
    return input


@overridable
def resize_as_(input, the_template, *, memory_format=None):
    """Resizes ``input`` to the size of ``the_template`` (``Tensor.resize_as_``)."""
    return input.resize_as_(the_template, memory_format=memory_format)


@overridable
def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """Creates an uninitialized tensor of ``size`` whose dimensions are laid out in memory in
    the order ``physical_layout`` (outermost first): a contiguous tensor of the permuted
    size, viewed back through the inverse permutation."""
    size = tuple(size)
    perm = tuple(int(p) for p in physical_layout)
    if len(perm) != len(size):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the "
                           f"physical_layout; i.e. len(size) = {len(size)} is not equal to "
                           f"len(physical_layout) = {len(perm)}")
    if sorted(perm) != list(range(len(size))):
        raise RuntimeError(f"Dimension {sorted(set(range(len(size))) - set(perm))} is not "
                           f"present in physical_layout {list(perm)}" if perm else
                           "physical_layout must be a permutation")
    physical = empty(tuple(size[p] for p in perm), dtype=dtype, device=device)
    inverse = tuple(int(i) for i in np.argsort(perm))
    out = physical.permute(inverse)
    return out.requires_grad_() if requires_grad else out


Tensor.set_ = overridable(_set_, "set_")
Tensor.as_strided_ = as_strided_
