"""Writing checkpoints in PyTorch's zip format, without importing torch.

The pickler writes the same global names ``torch.save`` writes (rebuild functions,
storage classes, ``torch.Size``, dtypes), so ``torch.load`` reads ember's files.
Views of one array are written as one storage, so shared memory survives a round
trip.  Storages are stored uncompressed at 64-byte aligned offsets, as torch's
writer does, so readers can memory-map them.
"""
import collections
import io
import pickle
import secrets
import threading

import numpy as np

from .._core import dtype as _dt
from .._core.device import device as _device
from .._core.tensor import Size, Tensor
from ._format import LEGACY_STORAGE_NAMES, STORAGE_ALIGNMENT
from ._torch_objects import (PER_TENSOR_AFFINE, QINT_STORAGES, QuantizedTensorRecord,
                             ScriptObjectRecord)
from ._zipwriter import ZipWriter


class _Global:
    """A global name to write into the pickle (``torch._utils._rebuild_tensor_v2``)."""
    __slots__ = ("module", "name")

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):  # pickle requires reduce functions to be callable
        raise TypeError(f"{self.module}.{self.name} is only a name written into checkpoints")


_GLOBALS = {}


def _global(module, name):
    """The one ``_Global`` of a name, so the pickler writes it once and refers back (as torch)."""
    g = _GLOBALS.get((module, name))
    if g is None:
        g = _GLOBALS[(module, name)] = _Global(module, name)
    return g


_REBUILD_V2 = _Global("torch._utils", "_rebuild_tensor_v2")
_REBUILD_V3 = _Global("torch._utils", "_rebuild_tensor_v3")
_REBUILD_PARAMETER = _Global("torch._utils", "_rebuild_parameter")
_REBUILD_PARAMETER_WITH_STATE = _Global("torch._utils", "_rebuild_parameter_with_state")
_REBUILD_FROM_TYPE = _Global("torch._tensor", "_rebuild_from_type_v2")
_REBUILD_META = _Global("torch._utils", "_rebuild_meta_tensor_no_storage")
_TORCH_TENSOR = _Global("torch", "Tensor")
_UNTYPED_STORAGE = _Global("torch.storage", "UntypedStorage")

# attributes of an ember Tensor that are autograd/storage machinery, never user state
_INTERNAL_ATTRS = frozenset({"_data", "_requires_grad", "_vc", "_base", "_view_chain",
                             "_view_base_fn", "_accumulator", "_hooks", "_post_acc_hooks",
                             "_grad", "grad_fn", "_output_nr", "_retains_grad", "_is_param",
                             "_fw_tangent", "_level"})


class _StorageRef:
    __slots__ = ("key", "dtype", "numel", "storage_name")

    def __init__(self, key, dtype, numel, storage_name=None):
        self.key, self.dtype, self.numel = key, dtype, numel
        self.storage_name = storage_name  # a quantized tensor's QInt8Storage & co.


class _EmptyOrderedDict:
    """Stands for the ``OrderedDict()`` of backward hooks torch writes with every tensor."""


def _fresh_strings(value):
    """``value`` with every string in its tuples and lists a new object (not memoized)."""
    if type(value) is str:
        return (value + " ")[:-1]
    if type(value) in (tuple, list):
        return type(value)(_fresh_strings(v) for v in value)
    return value


class Writer(pickle._Pickler):
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

    def _save_dtype(self, obj):
        self.write(pickle.GLOBAL + b"torch\n" + obj.name.encode() + b"\n")
        self.memoize(obj)

    dispatch[_dt.dtype] = _save_dtype
    dispatch[_dt.QuantizedDtype] = _save_dtype  # torch.qint8 & co. (dispatch is by exact type)

    def _save_empty_od(self, obj):
        # the class itself, so its GLOBAL is shared with a state dict's own OrderedDict
        self.save_reduce(collections.OrderedDict, (), obj=obj)

    dispatch[_EmptyOrderedDict] = _save_empty_od
    dispatch[_StorageRef] = None  # always written as a persistent id

    def _save_script_object(self, obj):
        # torch: ScriptObject.__new__ via NEWOBJ, then BUILD with (state, qualified name)
        self.save(_global("torch", "ScriptObject"))
        self.write(pickle.EMPTY_TUPLE + pickle.NEWOBJ)
        self.memoize(obj)
        # torch's strings in a script object's state come fresh from C++: written, never
        # referenced back
        self.save(_fresh_strings((obj.state, obj.qualified_name)))
        self.write(pickle.BUILD)

    dispatch[ScriptObjectRecord] = _save_script_object

    def persistent_id(self, obj):
        if isinstance(obj, _StorageRef):
            legacy = obj.storage_name or LEGACY_STORAGE_NAMES.get(obj.dtype.name)
            if legacy is None:  # untyped storage: numel counts bytes
                return ("storage", _UNTYPED_STORAGE, obj.key, "cpu",
                        obj.numel * obj.dtype.itemsize)
            return ("storage", _global("torch", legacy), obj.key, "cpu", obj.numel)
        return None

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            return self._reduce_tensor(obj)
        if isinstance(obj, QuantizedTensorRecord):
            return self._reduce_qtensor(obj)
        if isinstance(obj, Size):
            return (_global("torch", "Size"), (tuple(int(s) for s in obj),))
        if isinstance(obj, _device):
            return (_global("torch", "device"), (str(obj),))
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
        src = arr if ok else root
        strides = tuple(s // isz for s in src.strides) if isz else (0,) * src.ndim
        return ref, off_bytes // max(isz, 1), strides

    def _reduce_tensor(self, t):
        from ..nn.parameter import Parameter
        if isinstance(t, Parameter):
            from .._core.tensor import wrap
            state = self._user_state(t)
            plain = wrap(t._data)
            if state:
                return (_REBUILD_PARAMETER_WITH_STATE,
                        (plain, t._requires_grad, _EmptyOrderedDict(), state))
            return (_REBUILD_PARAMETER, (plain, t._requires_grad, _EmptyOrderedDict()))
        if t.device.type == "meta":  # torch: dtype, sizes and strides, no storage
            rebuild = (_REBUILD_META, (t.dtype, tuple(int(n) for n in t.shape),
                                       tuple(t.stride()), bool(t._requires_grad)))
        else:
            rebuild = self._reduce_dense(t)
        state = self._user_state(t)
        if state:  # a tensor carrying Python attributes: torch's _rebuild_from_type_v2
            return (_REBUILD_FROM_TYPE, (rebuild[0], _TORCH_TENSOR, rebuild[1], state))
        return rebuild

    def _reduce_dense(self, t):
        arr = t._data if type(t._data) is np.ndarray else np.asarray(t.cpu()._data)
        ref, offset, strides = self._storage_of(arr)
        hooks = _EmptyOrderedDict()
        if ref.dtype.name in LEGACY_STORAGE_NAMES:
            return (_REBUILD_V2, (ref, offset, tuple(arr.shape), strides,
                                  bool(t._requires_grad), hooks))
        return (_REBUILD_V3, (ref, offset, tuple(arr.shape), strides, bool(t._requires_grad),
                              hooks, ref.dtype))

    def _reduce_qtensor(self, q):
        arr = np.asarray(q.int_repr.cpu()._data)
        ref, offset, strides = self._storage_of(arr)
        ref.storage_name = QINT_STORAGES[ref.dtype.name]
        qparams = (_global("torch", PER_TENSOR_AFFINE), q.scale, q.zero_point)
        return (_global("torch._utils", "_rebuild_qtensor"),
                (ref, offset, tuple(arr.shape), strides, qparams, False, _EmptyOrderedDict()))

    @staticmethod
    def _user_state(t):
        d = getattr(t, "__dict__", None)
        if not d:
            return None
        return {k: v for k, v in d.items() if k not in _INTERNAL_ATTRS} or None


def _serialization_id():
    """A fresh 40-digit id, the length of the one torch writes (two zero-padded 64-bit draws)."""
    draw = secrets.randbits
    return f"{draw(64):020d}{draw(64):020d}".encode()


class _SkipData(threading.local):
    active = False
    materialize_fake_tensors = False


SKIP_DATA = _SkipData()  # set by serialization.skip_data, per thread


def write_archive(obj, fp, prefix, protocol, record_byteorder=True):
    buf = io.BytesIO()
    w = Writer(buf, protocol)
    w.dump(obj)
    zw = ZipWriter(fp)
    zw.write_record(f"{prefix}/data.pkl", buf.getbuffer())
    zw.write_record(f"{prefix}/.format_version", b"1")
    zw.write_record(f"{prefix}/.storage_alignment", str(STORAGE_ALIGNMENT).encode())
    if record_byteorder:
        zw.write_record(f"{prefix}/byteorder", b"little")
    for key, arr in w.storages.items():
        if SKIP_DATA.active:  # the record keeps its size; its bytes are left empty
            zw.write_record(f"{prefix}/data/{key}", np.zeros(arr.nbytes, dtype=np.uint8))
            continue
        data = arr if arr.dtype.byteorder in "=|<" else arr.astype(arr.dtype.newbyteorder("<"))
        zw.write_record(f"{prefix}/data/{key}", np.ascontiguousarray(data).reshape(-1).view(np.uint8))
    zw.write_record(f"{prefix}/version", b"3\n")
    zw.write_record(f"{prefix}/.data/serialization_id", _serialization_id())
    zw.close()
