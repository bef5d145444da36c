"""Storages: the memory under a tensor and its views (``torch.UntypedStorage``,
``torch.TypedStorage``).

A storage is a window on the root array a tensor's data views (the NumPy array that
owns the memory), so every view of a tensor reports the same storage: the same
``data_ptr``, ``nbytes`` and contents, and writes through a storage are seen by the
tensors.  ``UntypedStorage`` is its bytes; ``TypedStorage`` (deprecated in torch, still
what ``Tensor.storage()`` returns) its elements of the tensor's dtype.
"""
import warnings

import numpy as np

from . import dtype as _dt
from .device import CPU

__all__ = ["UntypedStorage", "TypedStorage"]


def _root(a):
    while isinstance(getattr(a, "base", None), np.ndarray):
        a = a.base
    return a


def _warn_typed():
    warnings.warn("TypedStorage is deprecated. It will be removed in the future and "
                  "UntypedStorage will be the only storage class. This should only matter to "
                  "you if you are using storages directly.  To access UntypedStorage "
                  "directly, use tensor.untyped_storage() instead of tensor.storage()",
                  UserWarning, stacklevel=3)


class UntypedStorage:
    """The bytes of a tensor's memory.  ``UntypedStorage(n)`` allocates ``n`` zeroed bytes."""

    def __init__(self, *args, device=None):
        if len(args) == 1 and isinstance(args[0], int):
            self._bytes = np.zeros(args[0], dtype=np.uint8)
        elif len(args) == 1 and isinstance(args[0], (list, tuple)):
            self._bytes = np.array(args[0], dtype=np.uint8)
        elif not args:
            self._bytes = np.zeros(0, dtype=np.uint8)
        else:
            raise TypeError(f"UntypedStorage(): invalid arguments {args}")

    @classmethod
    def _of_array(cls, a):
        s = object.__new__(cls)
        root = _root(a)
        s._bytes = root.reshape(-1).view(np.uint8) if root.flags.c_contiguous else \
            np.frombuffer(root, dtype=np.uint8)
        return s

    def data_ptr(self):
        return self._bytes.__array_interface__["data"][0]

    def nbytes(self):
        return self._bytes.size

    size = nbytes

    def __len__(self):
        return self._bytes.size

    def element_size(self):
        return 1

    @property
    def device(self):
        return CPU

    def get_device(self):
        return -1

    is_cuda = False
    is_sparse = False

    def __getitem__(self, i):
        r = self._bytes[i]
        return int(r) if np.ndim(r) == 0 else UntypedStorage._of_array(np.array(r))

    def __setitem__(self, i, v):
        self._bytes[i] = v

    def tolist(self):
        return self._bytes.tolist()

    def fill_(self, value):
        self._bytes[...] = value
        return self

    def copy_(self, source, non_blocking=None):
        self._bytes[...] = source._bytes
        return self

    def clone(self):
        return UntypedStorage._of_array(self._bytes.copy())

    def cpu(self):
        return self

    def is_shared(self):
        return False

    def share_memory_(self):
        return self

    def is_pinned(self, device="cuda"):
        return False

    def untyped(self):
        return self

    def __repr__(self):
        body = "\n".join(f" {b}" for b in self._bytes.tolist())
        return f"{body}\n[{_dt.REPR_PREFIX[0]}storage.UntypedStorage(device=cpu) of size " \
               f"{self.nbytes()}]"


class TypedStorage:
    """The elements of a tensor's memory, of one dtype (deprecated by torch in favour of
    `UntypedStorage`; ``Tensor.storage()`` returns one, with torch's warning)."""

    is_sparse = False

    def __init__(self, *args, dtype=None, device=None, wrap_storage=None, _internal=False):
        if not _internal:
            _warn_typed()
        self.dtype = dtype or _dt.get_default_dtype()
        if wrap_storage is not None:
            self._untyped = wrap_storage
        elif len(args) == 1 and isinstance(args[0], int):
            self._untyped = UntypedStorage(args[0] * self.dtype.itemsize)
        elif len(args) == 1 and isinstance(args[0], (list, tuple)):
            self._untyped = UntypedStorage._of_array(np.array(args[0], dtype=self.dtype.np))
        else:
            self._untyped = UntypedStorage(0)

    @property
    def _elements(self):
        return self._untyped._bytes.view(self.dtype.np)

    def untyped(self):
        return self._untyped

    def data_ptr(self):
        return self._untyped.data_ptr()

    def size(self):
        return self._untyped.nbytes() // self.dtype.itemsize

    def __len__(self):
        return self.size()

    def nbytes(self):
        return self._untyped.nbytes()

    def element_size(self):
        return self.dtype.itemsize

    @property
    def device(self):
        return CPU

    def get_device(self):
        return -1

    is_cuda = False

    def __getitem__(self, i):
        r = self._elements[i]
        return r.item() if np.ndim(r) == 0 else r.tolist()

    def __setitem__(self, i, v):
        self._elements[i] = v

    def tolist(self):
        return self._elements.tolist()

    def fill_(self, value):
        self._elements[...] = value
        return self

    def is_shared(self):
        return False

    def share_memory_(self):
        return self

    def is_pinned(self, device="cuda"):
        return False

    def cpu(self):
        return self

    def __repr__(self):
        body = "\n".join(f" {v}" for v in self.tolist())
        return f"{body}\n[{_dt.REPR_PREFIX[0]}storage.TypedStorage(dtype={self.dtype}, " \
               f"device=cpu) of size {self.size()}]"


def untyped_storage(self):
    """The bytes of the memory this tensor (and every view of it) lives in."""
    return UntypedStorage._of_array(np.asarray(self._data))


def storage(self):
    """The memory of this tensor as a `TypedStorage` of its dtype (deprecated in torch)."""
    _warn_typed()
    return TypedStorage(dtype=self.dtype, wrap_storage=untyped_storage(self), _internal=True)
