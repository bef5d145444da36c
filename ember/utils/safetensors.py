"""safetensors import/export of state dicts (the API of ``safetensors.torch``).

Uses the safetensors package's byte-level (de)serialiser, so every ember dtype,
bfloat16 and float8 included, round-trips and files interoperate with
``safetensors.torch``.  ``save_file`` is atomic (temporary file + rename).
"""
import os
import uuid

import numpy as np
import safetensors

from .._core import dtype as _dt
from .._core.tensor import Tensor, wrap

__all__ = ["save", "load", "save_file", "load_file", "save_model", "load_model"]

_CODES = {"bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "int32": "I32",
          "int64": "I64", "uint16": "U16", "uint32": "U32", "uint64": "U64", "float16": "F16",
          "bfloat16": "BF16", "float32": "F32", "float64": "F64", "complex64": "C64",
          "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2"}
_FROM_CODE = {v: getattr(_dt, k) for k, v in _CODES.items()}


def _flatten(tensors, keep_alive):
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, Tensor] but received {type(tensors)}")
    out = {}
    seen = {}
    for name, t in tensors.items():
        if not isinstance(t, Tensor):
            raise ValueError(f"Key `{name}` is invalid, expected ember.Tensor but received "
                             f"{type(t)}")
        d = t.dtype.name
        if d not in _CODES:
            raise ValueError(f"safetensors cannot store dtype {t.dtype} (tensor `{name}`)")
        arr = np.ascontiguousarray(t.detach().cpu().numpy())  # host bytes, from any device
        key = (arr.__array_interface__["data"][0], arr.nbytes)
        if arr.nbytes and key in seen:
            raise RuntimeError(f"Some tensors share memory, this will lead to duplicate memory on "
                               f"disk and potential differences when loading them again: "
                               f"[{seen[key]!r}, {name!r}]. Use save_model or clone the tensors.")
        seen[key] = name
        keep_alive.append(arr)
        out[name] = safetensors.TensorSpec(dtype=d, shape=arr.shape, data_ptr=arr.ctypes.data,
                                           data_len=arr.nbytes)
    return out


def save(tensors, metadata=None):
    """Serialise a dict of tensors to safetensors bytes."""
    keep = []
    return bytes(safetensors.serialize(_flatten(tensors, keep), metadata=metadata))


def save_file(tensors, filename, metadata=None):
    """Save a dict of tensors to ``filename`` in safetensors format (atomically)."""
    path = os.fspath(filename)
    tmp = os.path.join(os.path.dirname(os.path.abspath(path)),
                       f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
    try:
        keep = []
        safetensors.serialize_file(_flatten(tensors, keep), tmp, metadata=metadata)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _unflatten(items):
    out = {}
    for name, info in items:
        d = _FROM_CODE.get(info["dtype"])
        if d is None:
            raise ValueError(f"unsupported safetensors dtype {info['dtype']} for `{name}`")
        arr = np.frombuffer(bytearray(info["data"]), dtype=d.np).reshape(info["shape"])
        out[name] = wrap(arr)
    return out


def load(data):
    """Deserialise safetensors bytes into a dict of tensors."""
    return _unflatten(safetensors.deserialize(data))


def load_file(filename, device="cpu"):
    """Load a safetensors file into a dict of tensors."""
    with open(filename, "rb") as f:
        return load(f.read())


def save_model(model, filename, metadata=None, force_contiguous=False):
    """Save a Module's state_dict, storing tied (shared) tensors once, as safetensors does."""
    sd = model.state_dict()
    kept, seen = {}, {}
    for k, v in sd.items():
        key = (v.data_ptr(), v.nbytes, tuple(v.shape))
        if key in seen and v.nbytes:
            continue
        seen[key] = k
        kept[k] = v.contiguous() if force_contiguous else v
    save_file(kept, filename, metadata=metadata)


def load_model(model, filename, strict=True, device="cpu"):
    """Load a safetensors file into a Module; returns (missing, unexpected) key lists."""
    state = load_file(filename)
    sd = model.state_dict()
    by_ptr = {}
    for k, v in sd.items():
        by_ptr.setdefault((v.data_ptr(), tuple(v.shape)), []).append(k)
    for names in by_ptr.values():
        present = [n for n in names if n in state]
        for n in names:
            if n not in state and present:
                state[n] = state[present[0]]
    result = model.load_state_dict(state, strict=strict)
    return result.missing_keys, result.unexpected_keys
