"""``ember.save`` / ``ember.load``: PyTorch's zip checkpoint format, read and written.

A checkpoint is a zip archive holding ``data.pkl`` (a pickle in which every
tensor is a call to ``torch._utils._rebuild_tensor_v2`` on a *persistent*
storage reference) plus one raw little-endian file per storage under
``data/``.  Views of one storage are written once, so shared memory survives a
round trip.  ember writes the same global names PyTorch writes, so ``torch.load``
reads ember's files and ``ember.load`` reads PyTorch's -- without importing torch.

Loading is weights-only by default: the unpickler only accepts tensors, storages,
dtypes, sizes, devices, containers and plain Python values; anything else is
refused with a clear error before any of its code can run (``weights_only=False``
restores full pickle for trusted files).  Writes to a path are atomic: the
archive goes to a temporary file in the same directory that then replaces the
target, so an interrupted save never destroys the previous checkpoint.
"""
import builtins
import collections
import io
import os
import pickle
import struct
import uuid
import zipfile

import numpy as np

from ._core import dtype as _dt
from ._core.device import device as _device
from ._core.tensor import Size, Tensor, wrap

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "safe_globals",
           "clear_safe_globals"]

_STORAGE_NAMES = {
    "float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
    "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage",
    "int16": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage",
    "complex64": "ComplexFloatStorage", "complex128": "ComplexDoubleStorage",
    "uint16": "UInt16Storage", "uint32": "UInt32Storage", "uint64": "UInt64Storage",
    "float8_e4m3fn": "Float8_e4m3fnStorage", "float8_e5m2": "Float8_e5m2Storage",
}
_DTYPE_BY_STORAGE = {v: getattr(_dt, k) for k, v in _STORAGE_NAMES.items()}
_TORCH_DTYPE_NAMES = {d.name: d for d in _dt.ALL}
_TORCH_DTYPE_NAMES.update({"half": _dt.float16, "float": _dt.float32, "double": _dt.float64,
                           "long": _dt.int64, "int": _dt.int32, "short": _dt.int16,
                           "cfloat": _dt.complex64, "cdouble": _dt.complex128})


# ---- writing ------------------------------------------------------------------------------

class _Global:
    """A global name to write into the pickle (e.g. ``torch._utils._rebuild_tensor_v2``)
    without importing its module."""
    __slots__ = ("module", "name")

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):  # pickle requires reduce functions to be callable
        raise TypeError(f"{self.module}.{self.name} is only a name written into checkpoints")


_REBUILD_TENSOR = _Global("torch._utils", "_rebuild_tensor_v2")
_REBUILD_PARAMETER = _Global("torch._utils", "_rebuild_parameter")
_ORDERED_DICT = _Global("collections", "OrderedDict")


class _StorageRef:
    __slots__ = ("key", "dtype", "numel")

    def __init__(self, key, dtype, numel):
        self.key, self.dtype, self.numel = key, dtype, numel


class _Writer(pickle._Pickler):
    """Pure-Python pickler that writes tensors the way torch.save does."""
    dispatch = pickle._Pickler.dispatch.copy()

    def __init__(self, file, protocol):
        super().__init__(file, protocol)
        self.storages = {}       # key -> contiguous array with the storage's bytes
        self._storage_keys = {}  # id(root array) -> (key, root)

    def _save_global_name(self, obj):
        self.write(pickle.GLOBAL + obj.module.encode() + b"\n" + obj.name.encode() + b"\n")
        self.memoize(obj)

    dispatch[_Global] = _save_global_name

    def persistent_id(self, obj):
        if isinstance(obj, _StorageRef):
            return ("storage", _Global("torch", _STORAGE_NAMES[obj.dtype.name]), obj.key, "cpu",
                    obj.numel)
        return None

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            return self._reduce_tensor(obj)
        if isinstance(obj, Size):
            return (_Global("torch", "Size"), (tuple(int(s) for s in obj),))
        if isinstance(obj, _device):
            return (_Global("torch", "device"), (str(obj),))
        return NotImplemented

    def _storage_of(self, arr):
        """(storage ref, element offset, element strides) for ``arr``, sharing views' roots."""
        root = arr
        while isinstance(root.base, np.ndarray):
            root = root.base
        isz = arr.itemsize
        ok = (root.dtype == arr.dtype and root.flags.c_contiguous and isz and
              all(s >= 0 and s % isz == 0 for s in arr.strides))
        if ok:
            off_bytes = (arr.__array_interface__["data"][0] - root.__array_interface__["data"][0])
            ok = off_bytes % isz == 0 and off_bytes >= 0
        if not ok:
            root = np.ascontiguousarray(arr)
            off_bytes = 0
        entry = self._storage_keys.get(id(root))
        if entry is None:
            key = str(len(self._storage_keys))
            self._storage_keys[id(root)] = (key, root)
            self.storages[key] = root
        else:
            key = entry[0]
        ref = _StorageRef(key, _dt.FROM_NP[root.dtype], root.size)
        if not ok:
            strides = tuple(s // isz for s in root.strides) if isz else (0,) * root.ndim
        else:
            strides = tuple(s // isz for s in arr.strides) if isz else (0,) * arr.ndim
        return ref, off_bytes // max(isz, 1), strides

    def _reduce_tensor(self, t):
        from .nn.parameter import Parameter
        arr = np.asarray(t._data) if type(t._data) is np.ndarray else \
            np.asarray(t.cpu()._data)
        if isinstance(t, Parameter):
            plain = wrap(t._data)
            return (_REBUILD_PARAMETER, (plain, t._requires_grad, _EmptyOrderedDict()))
        ref, offset, strides = self._storage_of(arr)
        return (_REBUILD_TENSOR, (ref, offset, tuple(arr.shape), strides,
                                  bool(t._requires_grad), _EmptyOrderedDict()))


class _EmptyOrderedDict:
    pass


def _reduce_dtype_direct(self, obj):
    self.write(pickle.GLOBAL + b"torch\n" + obj.name.encode() + b"\n")
    self.memoize(obj)


_Writer.dispatch[_dt.dtype] = _reduce_dtype_direct


def _save_empty_od(self, obj):
    self.save_reduce(_ORDERED_DICT, (), obj=obj)


_Writer.dispatch[_EmptyOrderedDict] = _save_empty_od
_Writer.dispatch[_StorageRef] = None  # always written as a persistent id


def _aligned_writestr(zf, name, data, align=64):
    """Store ``data`` uncompressed with its bytes starting at a multiple of ``align`` (so
    readers can memory-map storages, as PyTorch's writer guarantees)."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    header = 30 + len(name.encode())
    pos = zf.fp.tell()
    pad = (-(pos + header + 4)) % align
    info.extra = struct.pack("<HH", 0xE3E3, pad) + b"Z" * pad
    zf.writestr(info, data)


def _write_archive(obj, fp, prefix, protocol):
    buf = io.BytesIO()
    w = _Writer(buf, protocol)
    w.dump(obj)
    with zipfile.ZipFile(fp, "w", compression=zipfile.ZIP_STORED) as zf:
        _aligned_writestr(zf, f"{prefix}/data.pkl", buf.getvalue())
        _aligned_writestr(zf, f"{prefix}/.format_version", b"1")
        _aligned_writestr(zf, f"{prefix}/.storage_alignment", b"64")
        _aligned_writestr(zf, f"{prefix}/byteorder", b"little")
        for key, arr in w.storages.items():
            data = arr if arr.dtype.byteorder in "=|<" else arr.astype(arr.dtype.newbyteorder("<"))
            _aligned_writestr(zf, f"{prefix}/data/{key}", data.tobytes())
        _aligned_writestr(zf, f"{prefix}/version", b"3\n")
        _aligned_writestr(zf, f"{prefix}/.data/serialization_id",
                          str(uuid.uuid4().int).encode())


def save(obj, f, pickle_module=pickle, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Saves an object (tensors, state dicts, nested containers) to a file or file-like object.

    The file is a PyTorch-format zip checkpoint, readable by ``torch.load``.  Beyond
    PyTorch: saving to a path is atomic (temporary file + rename)."""
    if not _use_new_zipfile_serialization:
        raise RuntimeError("ember only writes the zip checkpoint format "
                           "(_use_new_zipfile_serialization=False is not supported)")
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        prefix = os.path.splitext(os.path.basename(path))[0] or "archive"
        directory = os.path.dirname(os.path.abspath(path))
        tmp = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
        try:
            with open(tmp, "wb") as fp:
                _write_archive(obj, fp, prefix, pickle_protocol)
                fp.flush()
                os.fsync(fp.fileno())
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return
    _write_archive(obj, f, "archive", pickle_protocol)


# ---- reading ------------------------------------------------------------------------------

_SAFE_GLOBALS = {}


def add_safe_globals(safe_globals):
    """Marks globals as safe for ``weights_only`` loading (``torch.serialization``'s API)."""
    for g in safe_globals:
        if isinstance(g, tuple):
            g, name = g
        else:
            name = f"{g.__module__}.{g.__qualname__}"
        _SAFE_GLOBALS[name] = g


def get_safe_globals():
    return list(_SAFE_GLOBALS.values())


def clear_safe_globals():
    _SAFE_GLOBALS.clear()


class safe_globals:
    """Context manager that adds ``globals`` as safe for weights_only loading temporarily."""

    def __init__(self, safe_globals):
        self.globals = safe_globals

    def __enter__(self):
        self.saved = dict(_SAFE_GLOBALS)
        add_safe_globals(self.globals)

    def __exit__(self, *exc):
        _SAFE_GLOBALS.clear()
        _SAFE_GLOBALS.update(self.saved)


class _StorageType:
    __slots__ = ("dtype",)

    def __init__(self, dtype):
        self.dtype = dtype


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False,
                       backward_hooks=None, metadata=None):
    arr = storage
    isz = arr.itemsize
    n_needed = storage_offset + 1 + sum((s - 1) * st for s, st in zip(size, stride)) \
        if all(size) else 0
    if n_needed > arr.size:
        raise RuntimeError(f"storage of {arr.size} elements is too small for a tensor of size "
                           f"{list(size)} with strides {list(stride)} at offset {storage_offset}")
    view = np.lib.stride_tricks.as_strided(arr[storage_offset:] if arr.size else arr,
                                           shape=tuple(size),
                                           strides=tuple(st * isz for st in stride))
    t = wrap(view)
    t._base = _storage_owner(arr)
    from ._core.tensor import _version_of
    t._version = _version_of(t._base)
    if requires_grad:
        t.requires_grad_(True)
    return t


_OWNERS = {}


def _storage_owner(arr):
    # tensors rebuilt on one storage share a base (so in-place writes bump one version counter)
    owner = _OWNERS.get(id(arr))
    if owner is None or owner._data is not arr:
        owner = wrap(arr)
        _OWNERS[id(arr)] = owner
    return owner


def _rebuild_parameter(data, requires_grad, backward_hooks=None, *args):
    from .nn.parameter import Parameter
    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    p = _rebuild_parameter(data, requires_grad)
    if state:
        p.__dict__.update(state)
    return p


def _torch_global(module, name):
    """ember's stand-in for a global from a torch checkpoint, or None."""
    if module == "torch._utils":
        return {"_rebuild_tensor_v2": _rebuild_tensor_v2, "_rebuild_parameter": _rebuild_parameter,
                "_rebuild_parameter_with_state": _rebuild_parameter_with_state}.get(name)
    if module == "torch":
        if name in _DTYPE_BY_STORAGE:
            return _StorageType(_DTYPE_BY_STORAGE[name])
        if name in _TORCH_DTYPE_NAMES:
            return _TORCH_DTYPE_NAMES[name]
        if name == "Size":
            return Size
        if name == "device":
            return _device
    if module == "collections" and name == "OrderedDict":
        return collections.OrderedDict
    if module == "torch.serialization" and name == "_get_layout":
        return lambda name: name
    return None


_SAFE_BUILTINS = {"set", "frozenset", "complex", "slice", "bytearray", "range", "tuple", "list",
                  "dict", "int", "float", "bool", "str", "bytes"}


class _Reader(pickle.Unpickler):
    def __init__(self, file, zf, prefix, weights_only, map_location):
        super().__init__(file)
        self.zf = zf
        self.prefix = prefix
        self.weights_only = weights_only
        self.map_location = map_location
        self.loaded = {}

    def find_class(self, module, name):
        g = _torch_global(module, name)
        if g is not None:
            return g
        full = f"{module}.{name}"
        if full in _SAFE_GLOBALS:
            return _SAFE_GLOBALS[full]
        if module == "builtins" and name in _SAFE_BUILTINS:
            return getattr(builtins, name)
        if module.startswith("ember") and name in ("Tensor",):
            return Tensor
        if self.weights_only:
            raise pickle.UnpicklingError(
                f"Weights only load failed. ember.load is weights-only by default: it refuses "
                f"to run code from the file. The file references the global '{full}', which is "
                f"not a tensor, container or plain value. If you trust the source of this file, "
                f"call ember.load(..., weights_only=False), or allow this global with "
                f"ember.serialization.add_safe_globals([{name}]).")
        if module.startswith("torch"):
            raise pickle.UnpicklingError(f"ember cannot load PyTorch object '{full}'")
        return super().find_class(module, name)

    def persistent_load(self, pid):
        kind = pid[0]
        if kind != "storage":
            raise pickle.UnpicklingError(f"unknown persistent id kind {kind!r}")
        _, storage_type, key, location, numel = pid[:5]
        dtype = storage_type.dtype if isinstance(storage_type, _StorageType) else \
            storage_type if isinstance(storage_type, _dt.dtype) else _dt.uint8
        _check_location(location, self.map_location)
        arr = self.loaded.get(key)
        if arr is None:
            raw = self.zf.read(f"{self.prefix}/data/{key}")
            arr = np.frombuffer(raw, dtype=dtype.np.newbyteorder("<") if dtype.itemsize > 1
                                else dtype.np).copy()
            if arr.dtype != dtype.np:
                arr = arr.astype(dtype.np)
            self.loaded[key] = arr
        return arr


def _check_location(location, map_location):
    if map_location is not None:
        return
    if str(location).startswith("cuda"):
        from ._core.device import _BACKENDS
        if "cuda" not in _BACKENDS:
            raise RuntimeError("Attempting to deserialize object on a CUDA device but no CUDA "
                               "backend is available. If you are running on a CPU-only machine, "
                               "please use ember.load with map_location='cpu' to map your "
                               "storages to the CPU.")


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None,
         **pickle_load_args):
    """Loads an object saved with ``ember.save`` or ``torch.save`` (zip format).

    ``weights_only=True`` (the default) only unpickles tensors, dtypes, sizes,
    containers and primitive values; set it to False only for trusted files."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fp:
            return _load_stream(fp, map_location, weights_only)
    return _load_stream(f, map_location, weights_only)


def _load_stream(fp, map_location, weights_only):
    start = fp.tell() if hasattr(fp, "tell") else 0
    magic = fp.read(4)
    fp.seek(start)
    if magic[:2] != b"PK":
        raise RuntimeError("ember.load only reads zip-format checkpoints (the format torch.save "
                           "has written since PyTorch 1.6); this file is in the legacy format. "
                           "Re-save it with a recent torch.")
    with zipfile.ZipFile(fp) as zf:
        names = zf.namelist()
        pkl = [n for n in names if n.endswith("/data.pkl")]
        if not pkl:
            raise RuntimeError("not a PyTorch/ember checkpoint: no data.pkl in the archive")
        prefix = pkl[0][: -len("/data.pkl")]
        reader = _Reader(io.BytesIO(zf.read(pkl[0])), zf, prefix, weights_only, map_location)
        obj = reader.load()
    return obj

