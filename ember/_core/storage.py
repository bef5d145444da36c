"""Storages: the memory under a tensor and its views (``torch.UntypedStorage``,
``torch.TypedStorage``).

A storage is a window on the root array a tensor's data views (the NumPy array that
owns the memory), so every view of a tensor reports the same storage: the same
``data_ptr``, ``nbytes`` and contents, and writes through a storage are seen by the
tensors.  ``UntypedStorage`` is its bytes; ``TypedStorage`` (deprecated in torch, still
what ``Tensor.storage()`` returns) its elements of the tensor's dtype.
"""
import sys
import warnings
import weakref

import numpy as np

from . import dtype as _dt
from .device import CPU

__all__ = ["UntypedStorage", "TypedStorage", "MetaUntypedStorage", "LEGACY_STORAGES"]


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

    def __new__(cls, *args, device=None):
        if cls is UntypedStorage and device is not None and _is_meta(device):
            return object.__new__(MetaUntypedStorage)
        return object.__new__(cls)

    def __init__(self, *args, device=None):
        if len(args) == 1 and isinstance(args[0], int):
            self._bytes = np.zeros(args[0], dtype=np.uint8)
        elif len(args) == 1 and isinstance(args[0], (list, tuple)):
            self._bytes = np.array(args[0], dtype=np.uint8)
        elif not args:
            self._bytes = np.zeros(0, dtype=np.uint8)
        else:
            raise TypeError(f"UntypedStorage(): invalid arguments {args}")
        self._owns = True

    @classmethod
    def _owned(cls, a):
        """A storage owning the bytes of the new contiguous array ``a``."""
        s = cls._of_array(np.ascontiguousarray(a))
        s._owns = True
        return s

    @classmethod
    def _of_array(cls, a):
        s = object.__new__(cls)
        root = _root(a)
        s._bytes = root.reshape(-1).view(np.uint8) if root.flags.c_contiguous else \
            np.frombuffer(root, dtype=np.uint8)
        s._owns = False
        return s

    def data_ptr(self):
        return self._bytes.__array_interface__["data"][0]

    @property
    def _cdata(self):
        """An integer naming the memory (torch's StorageImpl address): equal for the storages
        of a tensor and all its views, as libraries that key shared storages on it expect."""
        return id(_root(self._bytes))

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
        src = source.untyped()._bytes
        if src.size != self._bytes.size:
            raise RuntimeError(f"size does not match, self was {self._bytes.size} bytes but "
                               f"src was {src.size} bytes")
        self._bytes[...] = src
        return self

    def clone(self):
        c = UntypedStorage._of_array(self._bytes.copy())
        c._owns = True
        return c

    def cpu(self):
        return self

    def is_shared(self):
        return False

    def share_memory_(self):
        return self

    def untyped(self):
        return self

    def is_pinned(self, device=None):
        return False

    def pin_memory(self, device=None):
        raise RuntimeError("Cannot access accelerator device when none is available.")

    @property
    def is_hpu(self):
        return False

    @property
    def filename(self):
        return None  # not mapped from a file

    def resizable(self):
        # a storage of its own can grow; one under a tensor is that tensor's NumPy memory
        return self._owns

    def resize_(self, size):
        if not self._owns:
            raise RuntimeError("Trying to resize storage that is not resizable")
        grown = np.zeros(size, dtype=np.uint8)
        n = min(size, self._bytes.size)
        grown[:n] = self._bytes[:n]
        self._bytes = grown
        return self

    def new(self):
        return UntypedStorage()

    def byteswap(self, dtype):
        """Reverses the byte order of each ``dtype``-sized element, in place."""
        w = dtype.itemsize
        if w > 1:
            self._bytes[...] = self._bytes.reshape(-1, w)[:, ::-1].reshape(-1)

    def to(self, *, device, non_blocking=False):
        return _to_device(self, device)

    def cuda(self, device=None, non_blocking=False):
        return _to_device(self, "cuda" if device is None else device)

    def type(self, dtype=None, non_blocking=False):
        if dtype is None:
            return "torch.storage.UntypedStorage"
        return _storage_of_type_name(dtype)(self._bytes.tolist())

    @classmethod
    def from_buffer(cls, buffer, byte_order="native", *, dtype=None, count=-1, offset=0):
        if dtype is None:
            dtype = _dt.uint8
        return _from_buffer(buffer, byte_order, dtype, count, offset).untyped()

    @classmethod
    def from_file(cls, filename, shared=False, nbytes=0):
        """A storage of the first ``nbytes`` of ``filename``, memory-mapped: with ``shared``
        its writes reach the file (created or grown as needed), otherwise they stay private."""
        s = cls._of_array(map_file(filename, bool(shared), nbytes))
        s._owns = True
        return s

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
            self._untyped = UntypedStorage(args[0] * self.dtype.itemsize, device=device)
        elif len(args) == 1 and isinstance(args[0], (list, tuple)):
            self._untyped = UntypedStorage._owned(np.array(args[0], dtype=self.dtype.np))
        else:
            self._untyped = UntypedStorage(0)

    @property
    def _elements(self):
        if isinstance(self._untyped, MetaUntypedStorage):
            raise NotImplementedError(_NOT_AVAILABLE)
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
        return self._untyped.device

    def get_device(self):
        return self._untyped.get_device()

    is_cuda = False

    def __getitem__(self, i):
        r = self._elements[i]
        return r.item() if np.ndim(r) == 0 else r.tolist()

    def __setitem__(self, i, v):
        if not isinstance(self._untyped, MetaUntypedStorage):  # meta: nothing to write
            self._elements[i] = v

    def tolist(self):
        return self._elements.tolist()

    def fill_(self, value):
        if not isinstance(self._untyped, MetaUntypedStorage):  # meta: nothing to fill
            self._elements[...] = value
        return self

    def is_shared(self):
        return False

    def share_memory_(self):
        self._untyped.share_memory_()
        return self

    def is_pinned(self, device=None):
        return False

    def pin_memory(self, device=None):
        raise RuntimeError("Cannot access accelerator device when none is available.")

    def cpu(self):
        if isinstance(self._untyped, MetaUntypedStorage):
            return TypedStorage(wrap_storage=self._untyped.cpu(), dtype=self.dtype,
                                _internal=True)
        return self

    @property
    def is_hpu(self):
        return False

    @property
    def filename(self):
        return None

    def resizable(self):
        return self._untyped.resizable()

    def resize_(self, size):
        self._untyped.resize_(size * self.dtype.itemsize)

    def copy_(self, source, non_blocking=None):
        self._untyped.copy_(source, non_blocking)
        return self

    def clone(self):
        return TypedStorage(wrap_storage=self._untyped.clone(), dtype=self.dtype, _internal=True)

    def to(self, *, device, non_blocking=False):
        return TypedStorage(wrap_storage=_to_device(self._untyped, device), dtype=self.dtype,
                            _internal=True)

    def cuda(self, device=None, non_blocking=False):
        return self.to(device="cuda" if device is None else device)

    def pickle_storage_type(self):
        return _LEGACY_NAME[self.dtype]

    def type(self, dtype=None, non_blocking=False):
        if dtype is None:  # torch has no legacy class of meta storages
            return "torch.storage.TypedStorage" if isinstance(
                self._untyped, MetaUntypedStorage) else f"torch.{_LEGACY_NAME[self.dtype]}"
        return _storage_of_type_name(dtype)(self.tolist())

    @classmethod
    def from_buffer(cls, buffer, byte_order="native", *, dtype=None, count=-1, offset=0):
        dtype = getattr(cls, "_legacy_dtype", None) or dtype or _dt.get_default_dtype()
        return _from_buffer(buffer, byte_order, dtype, count, offset)

    @classmethod
    def from_file(cls, filename, shared, size):
        """``size`` elements of this legacy class's dtype (``FloatStorage.from_file``), read
        through a memory map of ``filename`` (see ``UntypedStorage.from_file``)."""
        dtype = getattr(cls, "_legacy_dtype", None)
        if dtype is None:
            raise RuntimeError("from_file can only be called on derived classes")
        raw = UntypedStorage.from_file(filename, shared, size * dtype.itemsize)
        return TypedStorage(wrap_storage=raw, dtype=dtype, _internal=True)

    def _cast(self, dtype):
        if dtype is self.dtype:
            return self
        if isinstance(self._untyped, MetaUntypedStorage):
            return TypedStorage(wrap_storage=MetaUntypedStorage(self.size() * dtype.itemsize),
                                dtype=dtype, _internal=True)
        return TypedStorage(wrap_storage=UntypedStorage._owned(
            self._elements.astype(dtype.np)), dtype=dtype, _internal=True)

    def __repr__(self):
        meta = isinstance(self._untyped, MetaUntypedStorage)
        body = "..." if meta else "\n".join(f" {v}" for v in self.tolist())
        return f"{body}\n[{_dt.REPR_PREFIX[0]}storage.TypedStorage(dtype={self.dtype}, " \
               f"device={'meta' if meta else 'cpu'}) of size {self.size()}]"


_NOT_AVAILABLE = "Not available for 'meta' device type"


def _is_meta(device):
    return getattr(device, "type", str(device).split(":")[0]) == "meta"


class MetaUntypedStorage(UntypedStorage):
    """The storage of a meta tensor (``UntypedStorage(n, device="meta")``): a size in bytes
    and no memory, as torch's: ``data_ptr()`` 0, values unreadable (torch's errors), writes
    and fills accepted and dropped, resizable."""

    def __init__(self, *args, device=None):
        if len(args) == 1 and isinstance(args[0], int):
            self._nbytes = args[0]
        elif not args:
            self._nbytes = 0
        else:
            raise TypeError(f"UntypedStorage(): invalid arguments {args} for device meta")
        self._owns = True

    @property
    def _bytes(self):
        raise NotImplementedError(_NOT_AVAILABLE)

    def data_ptr(self):
        return 0

    @property
    def _cdata(self):
        return id(self)  # one object per meta root (kept on its MetaArray)

    def nbytes(self):
        return self._nbytes

    size = nbytes

    def __len__(self):
        return self._nbytes

    @property
    def device(self):
        from .device import device
        return device("meta")

    def get_device(self):
        return None

    def __getitem__(self, i):
        raise NotImplementedError(_NOT_AVAILABLE)

    def __setitem__(self, i, v):
        pass

    def tolist(self):
        raise NotImplementedError(_NOT_AVAILABLE)

    def fill_(self, value):
        return self

    def copy_(self, source, non_blocking=None):
        return self

    def clone(self):
        return MetaUntypedStorage(self._nbytes)

    def cpu(self):
        from .meta_device import no_data
        no_data()

    def share_memory_(self):
        raise RuntimeError("_share_fd_: only available on CPU")

    def resize_(self, size):
        self._nbytes = int(size)
        return self

    def byteswap(self, dtype):
        pass

    def type(self, dtype=None, non_blocking=False):
        if dtype is None:
            return "torch.storage.UntypedStorage"
        return TypedStorage(wrap_storage=MetaUntypedStorage(self._nbytes * _storage_of_type_name(
            dtype).dtype.itemsize), dtype=_storage_of_type_name(dtype).dtype, _internal=True)

    def __reduce_ex__(self, proto):
        self.cpu()  # torch: no data to pickle

    def __repr__(self):
        return f"...\n[{_dt.REPR_PREFIX[0]}storage.UntypedStorage(device=meta) of size " \
               f"{self._nbytes}]"


# ---- conversions, moves, buffers, the legacy per-dtype classes (torch.FloatStorage, ...) --
_CASTS = {"bool": _dt.bool, "byte": _dt.uint8, "char": _dt.int8, "short": _dt.int16,
          "int": _dt.int32, "long": _dt.int64, "half": _dt.float16, "bfloat16": _dt.bfloat16,
          "float": _dt.float32, "double": _dt.float64, "complex_float": _dt.complex64,
          "complex_double": _dt.complex128, "float8_e4m3fn": _dt.float8_e4m3fn,
          "float8_e5m2": _dt.float8_e5m2}


def _typed_cast(dt):
    def cast(self):
        return self._cast(dt)
    cast.__doc__ = f"This storage's elements converted to {dt.name}."
    return cast


def _untyped_cast(dt):
    def cast(self):
        # torch reads each byte as one element of the new type
        return TypedStorage(wrap_storage=UntypedStorage._owned(self._bytes.astype(dt.np)),
                            dtype=dt, _internal=True)
    cast.__doc__ = f"Each byte of this storage as a {dt.name} element."
    return cast


def _meta_cast(dt):
    def cast(self):
        # each byte one element of the new type, as for a storage with memory
        return TypedStorage(wrap_storage=MetaUntypedStorage(self._nbytes * dt.itemsize),
                            dtype=dt, _internal=True)
    cast.__doc__ = f"Each byte of this storage as a {dt.name} element (no data: meta)."
    return cast


for _name, _dtype in _CASTS.items():
    setattr(TypedStorage, _name, _typed_cast(_dtype))
    setattr(UntypedStorage, _name, _untyped_cast(_dtype))
    setattr(MetaUntypedStorage, _name, _meta_cast(_dtype))
del _name, _dtype


def _to_device(untyped, device):
    from .device import device as _device
    d = _device(device) if isinstance(device, str) else device
    if _is_meta(d):  # a meta storage of the same size (torch)
        return MetaUntypedStorage(untyped.nbytes())
    if isinstance(untyped, MetaUntypedStorage):
        untyped.cpu()  # no data to move
    if getattr(d, "type", d) != "cpu":
        raise RuntimeError(f"ember storages live in host memory; cannot move one to {d}")
    return untyped


def map_file(filename, shared, nbytes):
    """The first ``nbytes`` of ``filename`` as a uint8 array: written through to the file
    (created or grown as needed) when ``shared``, else a private copy-on-write mapping."""
    import os
    if shared:
        if not os.path.exists(filename) or os.path.getsize(filename) < nbytes:
            with open(filename, "ab") as f:
                f.truncate(max(nbytes, os.path.getsize(filename)))
        mode = "r+"
    else:
        if not os.path.exists(filename):
            raise RuntimeError(f"unable to open file <{filename}> in read-only mode: No such "
                               f"file or directory (2)")
        size = os.path.getsize(filename)
        if size < nbytes:
            raise RuntimeError(f"file <{filename}> size <{size}> is smaller than the required "
                               f"mapping size <{nbytes}>")
        mode = "c"
    if nbytes == 0:
        return np.zeros(0, dtype=np.uint8)
    return np.memmap(filename, dtype=np.uint8, mode=mode, shape=(nbytes,))


def _from_buffer(buffer, byte_order, dtype, count, offset):
    if byte_order not in ("native", "little", "big"):
        raise ValueError(f"Expected byte_order to be one of 'little', 'big' or 'native', but "
                         f"got {byte_order!r}")
    raw = np.frombuffer(buffer, dtype=np.uint8, offset=offset)
    w = dtype.itemsize
    if count < 0:
        if raw.size % w:
            raise RuntimeError(f"buffer size ({raw.size}) must be a multiple of element size "
                               f"({w})")
        count = raw.size // w
    elements = raw[:count * w].copy().view(dtype.np)
    if w > 1 and byte_order not in ("native", sys.byteorder):
        elements = elements.byteswap()
    return TypedStorage(wrap_storage=UntypedStorage._owned(elements), dtype=dtype,
                        _internal=True)


_LEGACY_NAME = {_dt.float32: "FloatStorage", _dt.float64: "DoubleStorage",
                _dt.float16: "HalfStorage", _dt.bfloat16: "BFloat16Storage",
                _dt.int64: "LongStorage", _dt.int32: "IntStorage", _dt.int16: "ShortStorage",
                _dt.int8: "CharStorage", _dt.uint8: "ByteStorage", _dt.bool: "BoolStorage",
                _dt.complex64: "ComplexFloatStorage", _dt.complex128: "ComplexDoubleStorage"}


class _LegacyStorageMeta(type):
    # torch.FloatStorage(...) builds a TypedStorage of float32; isinstance asks its dtype
    def __instancecheck__(cls, obj):
        return isinstance(obj, TypedStorage) and obj.dtype is cls._legacy_dtype


def _legacy_class(name, dt):
    def __new__(cls, *args, wrap_storage=None, dtype=None, device=None, _internal=False):
        if dtype is not None:
            raise RuntimeError(f"{cls.__name__}(): Keyword argument 'dtype' cannot be "
                               f"specified (the class fixes it)")
        if not _internal:
            _warn_typed()
        return TypedStorage(*args, dtype=dt, device=device, wrap_storage=wrap_storage,
                            _internal=True)
    return _LegacyStorageMeta(name, (TypedStorage,), {
        "__new__": __new__, "_legacy_dtype": dt, "dtype": dt, "__module__": "ember",
        "__doc__": f"``torch.{name}``: builds a `TypedStorage` of {dt.name}."})


LEGACY_STORAGES = {name: _legacy_class(name, dt) for dt, name in _LEGACY_NAME.items()}


def _storage_of_type_name(name):
    cls = LEGACY_STORAGES.get(str(name).rsplit(".", 1)[-1])
    if cls is None:
        raise RuntimeError(f"invalid storage type {name!r}")
    return cls


def untyped_storage(self):
    """The bytes of the memory this tensor (and every view of it) lives in; a meta tensor's
    is a `MetaUntypedStorage`, at first of the size its root tensor's layout spans, then
    the same object (kept on the root's MetaArray: its ``resize_`` stays seen)."""
    from .meta_device import MetaArray
    if type(self._data) is MetaArray:
        root = (self._base if self._base is not None else self)._data
        if root.storage is None:
            span = 0 if 0 in root.shape else root.offset + 1 + sum(
                (n - 1) * (st // root.itemsize) for n, st in zip(root.shape, root.strides))
            root.storage = MetaUntypedStorage(span * root.itemsize)
        return root.storage
    root = _root(np.asarray(self._data))
    st = _TENSOR_STORAGES.get(id(root))
    if st is None or _root(st._bytes) is not root:
        st = UntypedStorage._of_array(root)
        _TENSOR_STORAGES[id(root)] = st
    return st


# root array id -> its storage, while someone holds the storage (which holds the root, so the
# id is not reused meanwhile): a tensor and its views report one storage object, as torch's
_TENSOR_STORAGES = weakref.WeakValueDictionary()


def storage(self):
    """The memory of this tensor as a `TypedStorage` of its dtype (deprecated in torch)."""
    _warn_typed()
    return TypedStorage(dtype=self.dtype, wrap_storage=untyped_storage(self), _internal=True)
