"""The globals a weights-only load may reference, and the user's allowlist.

The default set mirrors torch's weights-only unpickler: rebuild functions,
storage classes, dtypes, ``torch.Size``/``torch.device``/``torch.Tensor``,
``collections.OrderedDict``/``Counter`` and a few builtins.  Where torch calls a
builtin with whatever the file says (``bytearray(10**12)``), ember calls a
stand-in that only accepts arguments whose result is no larger than they are, so
a tiny file cannot allocate a huge object.  ``frozenset`` and ``slice`` are
allowed beyond torch because they are bounded the same way.
"""
import _codecs
import collections
import pickle

from .._core import dtype as _dt
from .._core.device import device as _device
from .._core.tensor import Size, Tensor
from ._torch_objects import QINT_STORAGES, QSCHEMES, ScriptObjectRecord, rebuild_qtensor
from ._format import (DTYPE_BY_LEGACY_STORAGE, QUANTIZED_STORAGES, TORCH_DTYPE_NAMES,
                      TORCH_ONLY_DTYPES)
from ._rebuild import TORCH_UTILS, rebuild_from_type_v2

_PLAIN_ITERABLES = (list, tuple, set, frozenset, dict, str, bytes, bytearray)


class StorageType:
    """Stands for a storage class named in a checkpoint (``torch.FloatStorage``)."""
    __slots__ = ("dtype", "name")

    def __init__(self, name, dtype=None):
        self.name, self.dtype = name, dtype

    def __repr__(self):
        return f"StorageType(dtype={self.dtype})"


UNTYPED_STORAGE = StorageType("UntypedStorage")


def _bounded_bytearray(source=b"", *rest):
    if rest or not isinstance(source, (bytes, bytearray, list, tuple)):
        raise pickle.UnpicklingError(
            f"bytearray() from a checkpoint may only copy bytes or a list of ints, not "
            f"{type(source).__name__} (which could allocate without bound)")
    return bytearray(source)


def _bounded_collection(kind):
    def build(iterable=()):
        if not isinstance(iterable, _PLAIN_ITERABLES):
            raise pickle.UnpicklingError(
                f"{kind.__name__}() from a checkpoint may only take a list, tuple, set or dict, "
                f"not {type(iterable).__name__}")
        return kind(iterable)
    build.__name__ = kind.__name__
    return build


def _bounded_complex(real=0.0, imag=0.0):
    if not all(type(v) in (int, float) for v in (real, imag)):
        raise pickle.UnpicklingError("complex() from a checkpoint takes two numbers")
    return complex(real, imag)


def _bounded_slice(*args):
    if len(args) > 3 or not all(a is None or type(a) is int for a in args):
        raise pickle.UnpicklingError("slice() from a checkpoint takes up to three ints or None")
    return slice(*args)


def _bounded_encode(obj, encoding="utf-8", errors="strict"):
    # protocol 2 pickles bytes as _codecs.encode(str, "latin1")
    if type(obj) is not str or encoding not in ("latin1", "latin-1", "utf-8", "utf8", "ascii"):
        raise pickle.UnpicklingError("_codecs.encode from a checkpoint only encodes text")
    return _codecs.encode(obj, encoding, errors)


def _get_layout(name):
    from .._core import layout as _layout
    short = str(name).rpartition(".")[2]
    layout = getattr(_layout, short, None)
    return layout if layout is not None else name


def _size(*args):
    if len(args) != 1 or not isinstance(args[0], (tuple, list)) or \
            not all(type(s) is int for s in args[0]):
        raise pickle.UnpicklingError(f"torch.Size takes one tuple of ints, got {args!r:.100}")
    return Size(args[0])


def _make_device(*args):
    try:
        return _device(*args)
    except (TypeError, ValueError) as e:
        raise pickle.UnpicklingError(f"invalid device in checkpoint: {e}") from None


def _build_allowed():
    from ..nn.parameter import Parameter
    allowed = {
        "collections.OrderedDict": collections.OrderedDict,
        "collections.Counter": collections.Counter,
        "torch.nn.parameter.Parameter": Parameter,
        "torch.serialization._get_layout": _get_layout,
        "torch.Size": _size,
        "torch.Tensor": Tensor,
        "torch.device": _make_device,
        "_codecs.encode": _bounded_encode,
        "builtins.bytearray": _bounded_bytearray,
        "builtins.set": _bounded_collection(set),
        "builtins.frozenset": _bounded_collection(frozenset),
        "builtins.complex": _bounded_complex,
        "builtins.slice": _bounded_slice,
        "torch._tensor._rebuild_from_type_v2": rebuild_from_type_v2,
        "torch.storage.UntypedStorage": UNTYPED_STORAGE,
    }
    for name, fn in TORCH_UTILS.items():
        allowed[f"torch._utils.{name}"] = fn
    for name, dt in TORCH_DTYPE_NAMES.items():
        allowed[f"torch.{name}"] = dt
    for name, dt in DTYPE_BY_LEGACY_STORAGE.items():
        allowed[f"torch.{name}"] = StorageType(name, dt)
    for name in QUANTIZED_STORAGES:
        allowed[f"torch.{name}"] = StorageType(name)
    # the integer storages of quantized tensors hold plain int8/uint8/int32 values
    for dt_name, name in QINT_STORAGES.items():
        allowed[f"torch.{name}"] = StorageType(name, getattr(_dt, dt_name))
    allowed["torch.ScriptObject"] = ScriptObjectRecord
    allowed["torch._utils._rebuild_qtensor"] = rebuild_qtensor
    for name, scheme in QSCHEMES.items():
        allowed[f"torch.{name}"] = scheme
    return allowed


_ALLOWED = None
# callables REDUCE may call and classes NEWOBJ may build, by identity
_CALLABLE_IDS = None


def allowed_globals():
    global _ALLOWED, _CALLABLE_IDS
    if _ALLOWED is None:
        _ALLOWED = _build_allowed()
        # Tensor and Parameter are values here (a type for _rebuild_from_type_v2, a class for
        # NEWOBJ), never called by REDUCE: their constructors take sizes and would allocate
        from ..nn.parameter import Parameter
        _CALLABLE_IDS = {id(v) for v in _ALLOWED.values() if callable(v)} - \
            {id(Tensor), id(Parameter)}
    return _ALLOWED


# ---- the user's allowlist (torch.serialization.add_safe_globals and friends) ----------------

_USER_GLOBALS = {}


def _qualified_name(g):
    if isinstance(g, tuple):
        if len(g) != 2:
            raise ValueError(f"Expected tuple of length 2 (global, str of callable full path), "
                             f"but got tuple of length: {len(g)}")
        if type(g[1]) is not str:
            raise TypeError(f"Expected second item in tuple to be str of callable full path, "
                            f"but got: {type(g[1])}")
        return g[1], g[0]
    return f"{g.__module__}.{g.__qualname__}", g


def add_safe_globals(safe_globals):
    """Marks the given globals as safe for ``weights_only`` load.

    Each entry is a class or function, or a ``(global, "module.name")`` tuple for a
    global saved under another name.  Only allowlist what you trust: its code runs
    while loading."""
    for g in safe_globals:
        name, value = _qualified_name(g)
        _USER_GLOBALS[name] = value


def get_safe_globals():
    """Returns the list of user-added globals that are safe for ``weights_only`` load."""
    return list(_USER_GLOBALS.values())


def clear_safe_globals():
    """Clears the list of globals that are safe for ``weights_only`` load."""
    _USER_GLOBALS.clear()


class safe_globals:
    """Context-manager that adds certain globals as safe for ``weights_only`` load.

    Example::

        >>> with ember.serialization.safe_globals([MyClass]):
        ...     obj = ember.load(path)
    """

    def __init__(self, safe_globals):
        self.safe_globals = safe_globals

    def __enter__(self):
        self._saved = dict(_USER_GLOBALS)
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc):
        _USER_GLOBALS.clear()
        _USER_GLOBALS.update(self._saved)


def resolve_weights_only(module, name):
    full = f"{module}.{name}"
    allowed = allowed_globals()
    if full in allowed:
        return allowed[full]
    if full in _USER_GLOBALS:
        return _USER_GLOBALS[full]
    if module == "torch" and name in TORCH_ONLY_DTYPES:
        raise pickle.UnpicklingError(f"the checkpoint uses the dtype torch.{name}, which ember "
                                     f"does not support")
    shown = name if module == "builtins" else full
    raise pickle.UnpicklingError(
        f"Unsupported global: GLOBAL {shown} was not an allowed global by default. Please use "
        f"`ember.serialization.add_safe_globals([{shown}])` or the "
        f"`ember.serialization.safe_globals([{shown}])` context manager to allowlist this "
        f"global if you trust this class/function.")


def is_allowed_callable(value):
    allowed_globals()
    if id(value) in _CALLABLE_IDS:
        return True
    return any(value is v for v in _USER_GLOBALS.values())


def is_allowed_class(cls):
    from ..nn.parameter import Parameter
    if cls in (collections.OrderedDict, collections.Counter, Parameter, ScriptObjectRecord):
        return True
    return isinstance(cls, type) and any(cls is v for v in _USER_GLOBALS.values())


def resolve_unrestricted(module, name):
    """``weights_only=False``: torch's names map to ember's, everything else imports."""
    full = f"{module}.{name}"
    allowed = allowed_globals()
    if full in allowed:
        return allowed[full]
    if full in _USER_GLOBALS:
        return _USER_GLOBALS[full]
    if module == "torch" or module.startswith("torch."):
        import importlib
        ember_module = "ember" + module[len("torch"):]
        try:
            return getattr(importlib.import_module(ember_module), name)
        except (ImportError, AttributeError):
            raise pickle.UnpicklingError(
                f"the checkpoint references {full}, which has no ember equivalent") from None
    import importlib
    return getattr(importlib.import_module(module), name)

