"""Plans, metadata and errors as plain data, for object collectives and the metadata file.

Everything crossing ranks or stored in ``.metadata`` is first turned into nested lists of
primitives, because object collectives and the metadata file are read with ``ember.load``'s
weights-only rules: a peer or a file can name only the checkpoint classes listed here, and
each is rebuilt from its fields, never by unpickling.
"""
import dataclasses
import enum

from . import metadata as _md
from . import planner as _pl
from .api import CheckpointException

_CLASSES = {c.__name__: c for c in (
    _md.ChunkStorageMetadata, _md.TensorProperties, _md.TensorStorageMetadata,
    _md.BytesStorageMetadata, _md.MetadataIndex, _md.StorageMeta, _md.Metadata,
    _pl.BytesIOWriteData, _pl.TensorWriteData, _pl.WriteItem, _pl.ReadItem, _pl.SavePlan,
    _pl.LoadPlan)}
_ENUMS = {c.__name__: c for c in (_pl.WriteItemType, _pl.LoadItemType)}
_DTYPES = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128", "int8",
           "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool",
           "float8_e4m3fn", "float8_e5m2")


def register_dataclass(cls):
    """Lets a custom planner's dataclass travel in plans (for subclasses' planner_data)."""
    _CLASSES[cls.__name__] = cls
    return cls


def _dtype_name(dtype):
    name = str(dtype).rsplit(".", 1)[-1]
    if name not in _DTYPES:
        raise ValueError(f"distributed checkpoint: unsupported dtype {dtype}")
    return name


def encode(obj):
    from ..._core.dtype import dtype as _dtype_cls
    if obj is None or isinstance(obj, (bool, int, float, str, bytes)):
        return obj
    if isinstance(obj, _dtype_cls):
        return ["dt", _dtype_name(obj)]
    if isinstance(obj, enum.Enum):
        return ["e", type(obj).__name__, obj.name]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        name = type(obj).__name__
        if _CLASSES.get(name) is not type(obj):
            raise TypeError(f"distributed checkpoint: cannot transmit {name}; register it "
                            "with ember.distributed.checkpoint._codec.register_dataclass")
        return ["c", name] + [encode(getattr(obj, f.name)) for f in dataclasses.fields(obj)]
    if isinstance(obj, tuple):
        return ["t"] + [encode(x) for x in obj]
    if isinstance(obj, list):
        return ["l"] + [encode(x) for x in obj]
    if isinstance(obj, dict):
        return ["d"] + [[encode(k), encode(v)] for k, v in obj.items()]
    if isinstance(obj, CheckpointException):
        return ["cx", obj.args[0], [[int(r), encode(e)] for r, e in obj.failures.items()]]
    if isinstance(obj, BaseException):
        return ["x", type(obj).__name__, str(obj.args[0]) if len(obj.args) == 1 else str(obj)]
    raise TypeError(f"distributed checkpoint: cannot encode a {type(obj).__name__}")


_EXCEPTIONS = {c.__name__: c for c in (KeyError, ValueError, RuntimeError, OSError,
                                       FileNotFoundError, TypeError, IndexError,
                                       NotImplementedError, AssertionError)}


class RemoteError(RuntimeError):
    """An exception raised on another rank, of a type not rebuilt here."""


def decode(obj):
    if obj is None or isinstance(obj, (bool, int, float, str, bytes)):
        return obj
    if not isinstance(obj, list) or not obj or not isinstance(obj[0], str):
        raise ValueError(f"distributed checkpoint: malformed record {type(obj).__name__}")
    tag, rest = obj[0], obj[1:]
    if tag == "t":
        return tuple(decode(x) for x in rest)
    if tag == "l":
        return [decode(x) for x in rest]
    if tag == "d":
        out = {}
        for pair in rest:
            if not isinstance(pair, list) or len(pair) != 2:
                raise ValueError("distributed checkpoint: malformed dict record")
            k = decode(pair[0])
            if isinstance(k, (list, dict)):
                raise ValueError("distributed checkpoint: malformed dict key")
            out[k] = decode(pair[1])
        return out
    if tag == "dt":
        if len(rest) != 1 or rest[0] not in _DTYPES:
            raise ValueError(f"distributed checkpoint: unknown dtype record {rest!r}")
        from ... import _core
        return getattr(_core.dtype, rest[0])
    if tag == "e":
        if len(rest) != 2 or rest[0] not in _ENUMS or rest[1] not in _ENUMS[rest[0]].__members__:
            raise ValueError(f"distributed checkpoint: unknown enum record {rest!r}")
        return _ENUMS[rest[0]][rest[1]]
    if tag == "c":
        if not rest or rest[0] not in _CLASSES:
            raise ValueError(f"distributed checkpoint: unknown class record {rest[:1]!r}")
        cls = _CLASSES[rest[0]]
        fields = dataclasses.fields(cls)
        if len(rest) - 1 != len(fields):
            raise ValueError(f"distributed checkpoint: {rest[0]} record has {len(rest) - 1} "
                             f"fields, expected {len(fields)}")
        return cls(*[decode(x) for x in rest[1:]])
    if tag == "cx":
        if len(rest) != 2 or not isinstance(rest[0], str) or not isinstance(rest[1], list):
            raise ValueError("distributed checkpoint: malformed exception record")
        return CheckpointException(rest[0], {int(r): decode(e) for r, e in rest[1]})
    if tag == "x":
        if len(rest) != 2:
            raise ValueError("distributed checkpoint: malformed exception record")
        cls = _EXCEPTIONS.get(rest[0])
        return cls(rest[1]) if cls is not None else RemoteError(f"{rest[0]}: {rest[1]}")
    raise ValueError(f"distributed checkpoint: unknown record tag {tag!r}")
