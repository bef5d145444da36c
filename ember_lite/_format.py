"""Reading a program file (the layout `ember.export.serde` documents) without ember: the zip
container, version checks, dtypes by name, size expressions, and weight storages."""
import ast
import functools
import io
import json
import os
import zipfile
import zlib

import numpy as np

__all__ = ["open_program", "np_dtype", "eval_size", "read_array", "READS"]

READS = range(1, 3)  # the format versions this runtime reads; every version ember wrote
_SCHEMA = 1
_MAX_JSON = 256 << 20

_NUMPY_NAMES = ("bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32",
                "uint64", "float16", "float32", "float64", "complex64", "complex128")
_ML_NAMES = ("bfloat16", "float8_e4m3fn", "float8_e5m2")


def np_dtype(name, where):
    """The NumPy dtype stored under ``name`` (ml_dtypes for bfloat16 and float8)."""
    if name in _NUMPY_NAMES:
        return np.dtype(name)
    if name in _ML_NAMES:
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, name))
    raise ValueError(f"{where}: unknown dtype {name!r}")


_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
        ast.Mult: lambda a, b: a * b, ast.FloorDiv: lambda a, b: a // b,
        ast.Mod: lambda a, b: a % b}


_CALLS = {"max": max, "min": min}   # ``max(s0, s1)``: ember.sym_max of two sizes


def is_extremum(n):
    """Whether ast node ``n`` is ``max(a, b)`` or ``min(a, b)``."""
    return isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and \
        n.func.id in _CALLS and len(n.args) == 2 and not n.keywords


@functools.lru_cache(maxsize=4096)
def _parse(text):
    try:
        return ast.parse(text, mode="eval").body if isinstance(text, str) and \
            len(text) < 1000 else None
    except SyntaxError:
        return None


def eval_size(text, env):
    """A size expression ("s0", "2*s0+1") with the symbols of ``env``: parsed with ``ast``;
    only integers, names, + - * // % and max/min of two are allowed (nothing is executed)."""
    tree = _parse(text) if isinstance(text, str) else None
    if tree is None:
        raise ValueError(f"malformed size expression {text!r}")

    def ev(n):
        if isinstance(n, ast.Constant) and type(n.value) is int:
            return n.value
        if isinstance(n, ast.Name):
            if n.id not in env:
                raise ValueError(f"size expression {text!r}: unbound symbol {n.id!r}")
            return env[n.id]
        if isinstance(n, ast.BinOp) and type(n.op) in _OPS:
            return _OPS[type(n.op)](ev(n.left), ev(n.right))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -ev(n.operand)
        if is_extremum(n):
            return _CALLS[n.func.id](ev(n.args[0]), ev(n.args[1]))
        raise ValueError(f"size expression {text!r}: only integers, symbols, + - * // % and "
                         f"max/min of two are allowed")
    return ev(tree)


class _Archive:
    """The members of a program file, every container error made a clear one (``who``
    names the loader in messages; ember.export.load reads files through this too)."""

    def __init__(self, f, who="ember_lite.load"):
        if not isinstance(f, (str, os.PathLike)) and not hasattr(f, "read"):
            raise TypeError(f"{who}: f must be a path or a readable binary file "
                            f"object, got {type(f).__name__}")
        self.label = os.fspath(f) if isinstance(f, (str, os.PathLike)) else \
            getattr(f, "name", "<file object>")
        try:
            if isinstance(f, (str, os.PathLike)):
                with open(f, "rb") as fh:
                    data = fh.read()
            else:
                data = f.read()
            self.zip = zipfile.ZipFile(io.BytesIO(data))
            self.names = set(self.zip.namelist())
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError) as e:
            raise RuntimeError(f"{self.label} is not an ember program file (not a readable "
                               f"zip archive: {e})") from None

    def read(self, name):
        if name not in self.names:
            raise RuntimeError(f"{self.label}: the program file has no member {name!r} "
                               f"(truncated, or not an ember program)")
        try:
            return self.zip.read(name)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as e:
            raise RuntimeError(f"{self.label}: member {name!r} is corrupt ({e})") from None

    def json(self, name):
        raw = self.read(name)
        if len(raw) > _MAX_JSON:
            raise ValueError(f"{self.label}: {name} is implausibly large")
        try:
            obj = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
            raise ValueError(f"{self.label}: {name} is not valid JSON ({e})") from None
        if not isinstance(obj, dict):
            raise ValueError(f"{self.label}: {name} must hold a JSON object")
        return obj


def open_program(f):
    """(archive, the lite program's JSON) after the version checks."""
    ar = _Archive(f)
    raw = ar.read("version").strip()
    try:
        version = int(raw.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        raise ValueError(f"{ar.label}: malformed format version {raw[:20]!r}") from None
    if version not in READS:
        raise RuntimeError(f"{ar.label}: this file has format version {version}; ember_lite "
                           f"reads {READS.start}..{READS.stop - 1}")
    prog = ar.json("lite/program.json")
    if prog.get("schema_version") != _SCHEMA:
        raise RuntimeError(f"{ar.label}: lite/program.json has schema version "
                           f"{prog.get('schema_version')!r}; ember_lite reads {_SCHEMA}")
    if "unsupported" in prog:   # the saver found the program outside what ember_lite runs
        raise RuntimeError(f"{ar.label}: {prog['unsupported']}")
    return ar, prog


def read_array(entry, ar, where):
    """The weight an entry of ``state_dict``/``constants`` describes (an owned copy)."""
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: malformed tensor entry")
    dt = np_dtype(entry.get("dtype"), where)
    shape, strides, offset = entry.get("shape"), entry.get("strides"), entry.get("offset", 0)
    ints = lambda xs: isinstance(xs, list) and all(type(x) is int and x >= 0 for x in xs)  # noqa
    if not (ints(shape) and ints(strides) and len(shape) == len(strides)
            and type(offset) is int and offset >= 0):
        raise ValueError(f"{where}: malformed shape/strides/offset")
    path = entry.get("storage")
    if not isinstance(path, str) or not path.startswith("data/"):
        raise ValueError(f"{where}: malformed storage name {path!r}")
    raw = ar.read(path)
    if len(raw) % dt.itemsize:
        raise ValueError(f"{where}: storage {path} is not a whole number of {dt.name} elements")
    flat = np.frombuffer(raw, dtype=dt.newbyteorder("<") if dt.kind not in "bV" else dt)
    if 0 in shape:
        return np.zeros(shape, dt)
    need = offset + sum((n - 1) * s for n, s in zip(shape, strides)) + 1
    if need > flat.size:
        raise ValueError(f"{where}: shape {shape} with strides {strides} needs {need} "
                         f"elements, but storage {path} holds {flat.size}")
    view = np.lib.stride_tricks.as_strided(flat[offset:], shape,
                                           [s * dt.itemsize for s in strides], writeable=False)
    return np.array(view, dtype=dt)
