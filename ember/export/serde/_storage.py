"""Raw weight storages of a program file: ``data/<n>`` holds the bytes (little-endian), and
the JSON entry says how to view them: dtype, shape, strides and offset in elements."""
import numpy as np

from ._values import dtype_name, np_dtype_from_name

__all__ = ["StorageWriter", "read_tensor_array"]


class StorageWriter:
    """Collects the arrays to write, one storage per distinct array object (tied weights
    share one)."""

    def __init__(self):
        self.blobs = {}   # "data/<n>" -> bytes
        self._by_id = {}  # id(array) -> "data/<n>"
        self._keep = []   # the arrays, alive so that ids stay unique

    def add(self, array):
        arr = np.asarray(array)
        path = self._by_id.get(id(arr))
        if path is None:
            path = f"data/{len(self.blobs)}"
            little = arr.astype(arr.dtype.newbyteorder("<"), copy=False) \
                if arr.dtype.byteorder == ">" else arr
            self.blobs[path] = np.ascontiguousarray(little).tobytes()
            self._by_id[id(arr)] = path
            self._keep.append(arr)
        shape = list(arr.shape)
        strides, acc = [], 1
        for n in reversed(shape):  # the stored bytes are C-contiguous
            strides.append(acc)
            acc *= n
        return {"storage": path, "dtype": dtype_name(arr.dtype), "shape": shape,
                "strides": strides[::-1], "offset": 0}


def read_tensor_array(entry, read_blob, where):
    """The array an entry describes (a fresh, writable copy); ``read_blob(path)`` gives the
    bytes of a storage.  A malformed entry raises ValueError naming ``where``."""
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: malformed tensor entry {entry!r}")
    dt = np_dtype_from_name(entry.get("dtype"), where)
    shape, strides, offset = entry.get("shape"), entry.get("strides"), entry.get("offset", 0)
    ints = lambda xs: isinstance(xs, list) and all(type(x) is int for x in xs)  # noqa: E731
    if not (ints(shape) and ints(strides) and len(shape) == len(strides)
            and type(offset) is int and offset >= 0 and all(n >= 0 for n in shape)
            and all(s >= 0 for s in strides)):
        raise ValueError(f"{where}: malformed shape/strides/offset {shape}/{strides}/{offset}")
    path = entry.get("storage")
    if not isinstance(path, str) or not path.startswith("data/"):
        raise ValueError(f"{where}: malformed storage name {path!r}")
    raw = read_blob(path)
    if len(raw) % dt.itemsize:
        raise ValueError(f"{where}: storage {path} has {len(raw)} bytes, not a whole number "
                         f"of {dt.name} elements")
    flat = np.frombuffer(raw, dtype=dt.newbyteorder("<") if dt.kind not in "bV" else dt)
    need = 0 if 0 in shape else offset + sum((n - 1) * s for n, s in zip(shape, strides)) + 1
    if need > flat.size:
        raise ValueError(f"{where}: shape {shape} with strides {strides} and offset {offset} "
                         f"needs {need} elements, but storage {path} holds {flat.size}")
    if 0 in shape:
        return np.zeros(shape, dt)
    view = np.lib.stride_tricks.as_strided(flat[offset:], shape,
                                           [s * dt.itemsize for s in strides], writeable=False)
    return np.array(view, dtype=dt)  # native byte order, owned and writable
