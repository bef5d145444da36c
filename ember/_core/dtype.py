"""ember dtypes and PyTorch's type-promotion rules.

A `dtype` wraps the NumPy dtype that stores its elements (bfloat16 and the float8s come
from ml_dtypes, imported on their first use: see `_LateDtype`).  Promotion follows torch
exactly: categories bool < integer < floating < complex, and operands in three tiers --
dimensioned tensors, zero-dim tensors, Python scalars -- where a lower tier only decides the
result when it raises the category (see `result_type`).
"""
import builtins
import sys
import threading

import numpy as np

__all__ = [
    "dtype", "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
    "float32", "float64", "complex64", "complex128", "half", "float", "double", "short",
    "int", "long", "cfloat", "cdouble", "chalf", "complex32", "get_default_dtype", "set_default_dtype",
    "promote_types", "result_type", "can_cast", "finfo", "iinfo", "is_floating_point",
    "is_complex", "uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2",
    "qint8", "quint8", "qint32",
]

_BOOL, _INT, _FLOAT, _COMPLEX = 0, 1, 2, 3
# how dtypes print ("ember.float32"); ember.compat.install() switches it to "torch." so that
# scripts comparing str(x.dtype) with "torch.float32" keep working
REPR_PREFIX = ["ember."]


class dtype:
    """The data type of a tensor's elements (``torch.dtype``)."""
    __slots__ = ("name", "np", "itemsize", "is_floating_point", "is_complex", "is_signed",
                 "category", "_rank")

    def __init__(self, name, np_dtype, category, rank, itemsize=None):
        self.name = name
        if np_dtype is not None:  # else a `_LateDtype`'s, set when ml_dtypes is imported
            self.np = np.dtype(np_dtype)
            itemsize = self.np.itemsize
        self.itemsize = itemsize
        self.category = category
        self.is_floating_point = category == _FLOAT
        self.is_complex = category == _COMPLEX
        self.is_signed = name not in ("bool", "uint8", "uint16", "uint32", "uint64")
        self._rank = rank

    def __repr__(self):
        return REPR_PREFIX[0] + self.name

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))

    @property
    def abbr(self):
        """The short name of graph printouts and tensor annotations ("f32", "bf16", "b8")."""
        n = self.name
        if n == "bool":
            return "b8"
        for long, short in (("bfloat", "bf"), ("float8_", "f8"), ("float", "f"), ("uint", "u"),
                            ("int", "i"), ("complex", "c")):
            if n.startswith(long):
                return short + n[len(long):]
        return n  # the quantized dtypes keep their names, as torch's do

    def to_real(self):
        return {complex32: float16, complex64: float32, complex128: float64}.get(self, self)

    def to_complex(self):
        return {float16: complex64, bfloat16: complex64, float32: complex64,
                float64: complex128}.get(self, self)


class _LateDtype(dtype):
    """A dtype whose NumPy type comes from ml_dtypes (bfloat16, the float8s).  Importing
    ml_dtypes costs about 0.5 CPU s, a quarter of ``import ember``, so it is imported when
    such a dtype's ``np`` is first read -- or when anyone else imports it, since its arrays
    may then reach ember (`_MlDtypesHook`) -- and every late dtype then becomes a plain
    `dtype` with its ``np`` slot filled, so later reads cost what any dtype's do."""
    __slots__ = ()

    def __init__(self, name, category, rank, itemsize):
        super().__init__(name, None, category, rank, itemsize)
        _LATE.append(self)

    @property
    def np(self):
        _load_ml_dtypes()
        return self.np


_LATE = []  # the late dtypes not resolved yet
_LATE_LOCK = threading.RLock()  # re-entered when the import below goes through the hook
_NP_SLOT = dtype.__dict__["np"]
# The NumPy dtypes of the floats narrower than float32, which kernels compute in float32:
# ml_dtypes' join these sets when it is imported (no array of theirs can exist before).
NP_HALVES = {np.dtype(np.float16)}  # float16, bfloat16
NP_NARROW_FLOATS = {np.dtype(np.float16)}  # float16, bfloat16, the float8s


def _load_ml_dtypes():
    with _LATE_LOCK:
        import ml_dtypes
        for d in _LATE:
            _NP_SLOT.__set__(d, np.dtype(getattr(ml_dtypes, d.name)))
            d.__class__ = dtype
            FROM_NP[d.np] = d
            NP_NARROW_FLOATS.add(d.np)
            if d.itemsize == 2:
                NP_HALVES.add(d.np)
        _LATE.clear()
        _remove_hook()


class _MlDtypesHook:
    """A meta-path finder that resolves the late dtypes right after ml_dtypes is imported by
    anyone (user code may make bfloat16 arrays and hand them to ember)."""

    @staticmethod
    def find_spec(fullname, path=None, target=None):
        if fullname != "ml_dtypes":
            return None
        _remove_hook()
        from importlib.util import find_spec
        spec = find_spec(fullname)
        if spec is not None and spec.loader is not None:
            run = spec.loader.exec_module

            def exec_module(module):
                run(module)
                _load_ml_dtypes()
            spec.loader.exec_module = exec_module
        return spec


def _remove_hook():
    if _MlDtypesHook in sys.meta_path:
        sys.meta_path.remove(_MlDtypesHook)


bool = dtype("bool", np.bool_, _BOOL, 0)
uint8 = dtype("uint8", np.uint8, _INT, 1)
int8 = dtype("int8", np.int8, _INT, 1)
int16 = dtype("int16", np.int16, _INT, 2)
int32 = dtype("int32", np.int32, _INT, 3)
int64 = dtype("int64", np.int64, _INT, 4)
uint16 = dtype("uint16", np.uint16, _INT, 2)
uint32 = dtype("uint32", np.uint32, _INT, 3)
uint64 = dtype("uint64", np.uint64, _INT, 4)
float16 = dtype("float16", np.float16, _FLOAT, 1)
bfloat16 = _LateDtype("bfloat16", _FLOAT, 1, 2)
float32 = dtype("float32", np.float32, _FLOAT, 2)
float64 = dtype("float64", np.float64, _FLOAT, 3)
float8_e4m3fn = _LateDtype("float8_e4m3fn", _FLOAT, 0, 1)
float8_e5m2 = _LateDtype("float8_e5m2", _FLOAT, 0, 1)
complex64 = dtype("complex64", np.complex64, _COMPLEX, 2)
complex128 = dtype("complex128", np.complex128, _COMPLEX, 3)
half, float, double = float16, float32, float64
short, int, long = int16, int32, int64
cfloat, cdouble = complex64, complex128

ALL = (bool, uint8, int8, int16, int32, int64, uint16, uint32, uint64, float16, bfloat16,
       float32, float64, float8_e4m3fn, float8_e5m2, complex64, complex128)
# Quantized dtypes name the integer type of quantized values for the quantization APIs
# (``quantize_dynamic(..., dtype=ember.qint8)``, the dtype of packed int8 weights).  No plain
# tensor has them -- quantized values live in int8/uint8/int32 storages beside their scale and
# zero point (ember.ao) -- so they stay out of ALL: no promotion entries, no NumPy lookup
# (np.int8 stays ember.int8).
class QuantizedDtype(dtype):
    """A quantized dtype: ``storage`` is the NumPy type of its integer values.  It has no
    ``np``, so a plain tensor factory or cast given one fails with a clear error (as torch's
    do) instead of silently making an int8 tensor."""
    __slots__ = ("storage",)

    def __init__(self, name, np_dtype, rank):
        self.storage = np.dtype(np_dtype)
        self.name, self.itemsize, self.category, self._rank = \
            name, self.storage.itemsize, _INT, rank
        self.is_floating_point = self.is_complex = False
        self.is_signed = name != "quint8"

    @property
    def np(self):
        raise RuntimeError(f"{self} is a quantized dtype: plain tensors cannot hold it "
                           f"(quantized values are made by ember.ao.quantization)")


class _ComplexHalf(dtype):
    """``complex32`` (``chalf``): two float16s.  NumPy has no such type, so no ember tensor
    holds it (reading ``np`` raises, as a factory or cast given it then does); the dtype
    itself is torch's -- identity, attributes, promotion, finfo -- for code that names or
    compares it (kornia lists it among the floating dtypes it accepts)."""
    __slots__ = ()

    def __init__(self):
        self.name, self.itemsize, self.category, self._rank = "complex32", 4, _COMPLEX, 1
        self.is_floating_point, self.is_complex, self.is_signed = False, True, True

    @property
    def np(self):
        raise NotImplementedError("ember.complex32 (ComplexHalf) tensors are not supported: "
                                  "NumPy has no complex type made of two float16s; use "
                                  "ember.complex64")


complex32 = chalf = _ComplexHalf()

qint8 = QuantizedDtype("qint8", np.int8, 1)
quint8 = QuantizedDtype("quint8", np.uint8, 1)
qint32 = QuantizedDtype("qint32", np.int32, 3)
QUANTIZED = (qint8, quint8, qint32)
_BY_NAME = {d.name: d for d in ALL + QUANTIZED + (complex32,)}
# NumPy dtype -> ember dtype; the hot path looks tensors' dtypes up here.
FROM_NP = {d.np: d for d in ALL if d not in _LATE}
FROM_NP.update({np.dtype(np.float16): float16})
if "ml_dtypes" in sys.modules:
    _load_ml_dtypes()
else:
    sys.meta_path.insert(0, _MlDtypesHook)


# Python's number types stand for dtypes wherever torch takes one, whatever the default
# dtype: torch.zeros(2, dtype=float) is float64, t.to(int) is int64
FROM_PYTHON = {builtins.bool: bool, builtins.int: int64, builtins.float: float64,
               builtins.complex: complex128}


def from_python_type(t, fname):
    """The dtype a type given as ``dtype`` stands for: Python's bool/int/float/complex as
    torch reads them; NumPy scalar types pass through (ember's own ops carry them); any other
    type is the TypeError torch's argument parser raises, naming ``fname``."""
    d = FROM_PYTHON.get(t)
    if d is not None:
        return d
    if issubclass(t, np.generic):
        return t
    raise TypeError(f"{fname}(): argument 'dtype' must be ember.dtype, not type ({t.__name__})")


def _dtype_by_name(name):
    return _BY_NAME[name]


def from_np(np_dtype):
    try:
        return FROM_NP[np_dtype]
    except KeyError:
        raise TypeError(f"ember has no dtype for NumPy dtype {np_dtype}") from None


_default = [float32]


def get_default_dtype():
    """Get the current default floating point dtype (initially ``ember.float32``)."""
    return _default[0]


def set_default_dtype(d):
    """Sets the default floating point dtype to ``d`` (float32 or float64, also float16/bfloat16)."""
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default[0] = d


def default_complex_dtype():
    return complex128 if _default[0] is float64 else complex64


def _promote_uncached(a, b):
    if a is b:
        return a
    if a.category == _BOOL:
        return b
    if b.category == _BOOL:
        return a
    if a.category != b.category:
        hi, lo = (a, b) if a.category > b.category else (b, a)
        if hi.category == _COMPLEX and lo.category == _FLOAT and lo._rank > hi._rank:
            return lo.to_complex()  # complex32/complex64 with a wider float
        if hi is complex32 and lo.category == _FLOAT and lo is not float16:
            return complex64  # bfloat16, the float8s
        return hi
    if a.category == _INT:
        if {a, b} & {uint16, uint32, uint64} and a.is_signed != b.is_signed:
            raise TypeError(f"Promotion for uint16, uint32, uint64 types is not supported, "
                            f"attempted to promote {a.name} and {b.name}")
        return FROM_NP[np.promote_types(a.np, b.np)]
    if a.category == _FLOAT and a._rank == b._rank:
        return float32  # float16 with bfloat16 (or the two float8s)
    return a if a._rank > b._rank else b


_PROMOTE = {(a, b): _promote_uncached(a, b) for a in ALL for b in ALL
            if not ({a, b} & {uint16, uint32, uint64} and a.category == b.category == _INT
                    and a.is_signed != b.is_signed)}


def promote_types(type1, type2):
    """The dtype with the smallest size and scalar kind that is not smaller nor of lower kind
    than either ``type1`` or ``type2``."""
    try:
        return _PROMOTE[(type1, type2)]
    except KeyError:
        return _promote_uncached(type1, type2)


def _combine_categories(higher, lower):
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.category == _COMPLEX:
        return higher
    if lower.category == _COMPLEX:
        return higher.to_complex() if higher.category == _FLOAT else lower
    if higher.category == _FLOAT:
        return higher
    if higher.category == _BOOL or lower.category == _FLOAT:
        return promote_types(higher, lower)
    return higher


NUMPY_SCALARS = (np.number, np.bool_)


def python_scalar(value):
    """A NumPy scalar as torch reads it where a number goes: its Python number, a weak operand
    in type promotion (``t_int * np.float64(1.5)`` is float32, ``torch.full((2,),
    np.float64(1))`` float32); ``np.bool_`` reads as a float, as torch's argument parser
    takes it through ``__float__``."""
    return builtins.float(value) if type(value) is np.bool_ else value.item()


def scalar_dtype(value):
    """The dtype a Python scalar takes when it is an operand (its 'wrapped number' type)."""
    t = type(value)
    if t is builtins.bool or t is np.bool_:
        return bool
    if t is builtins.int or isinstance(value, (np.integer,)):
        return int64
    if t is builtins.float or isinstance(value, np.floating):
        return _default[0]
    if t is builtins.complex or isinstance(value, np.complexfloating):
        return default_complex_dtype()
    if isinstance(value, builtins.int):  # int subclasses (ember.compile's symbolic sizes)
        return int64
    raise TypeError(f"expected a Tensor or a Python number, got {t.__name__}")


def result_type_of(tensors_dims, scalars):
    """torch's result type: ``tensors_dims`` are (dtype, ndim) pairs, ``scalars`` Python numbers."""
    dim_r = zero_r = wrapped_r = None
    for d, ndim in tensors_dims:
        if ndim:
            dim_r = d if dim_r is None else promote_types(dim_r, d)
        else:
            zero_r = d if zero_r is None else promote_types(zero_r, d)
    for s in scalars:
        d = scalar_dtype(s)
        wrapped_r = d if wrapped_r is None else promote_types(wrapped_r, d)
    return _combine_categories(dim_r, _combine_categories(zero_r, wrapped_r))


def result_type(tensor1, tensor2):
    """Returns the dtype that would result from an arithmetic operation on the operands."""
    from .tensor import Tensor
    pairs, scalars = [], []
    for t in (tensor1, tensor2):
        if isinstance(t, Tensor):
            pairs.append((t.dtype, t.dim()))
        else:
            scalars.append(t)
    return result_type_of(pairs, scalars)


def can_cast(from_, to):
    """Whether a type conversion is allowed under PyTorch's casting rules (no lowering of kind)."""
    if from_.category > to.category:
        return False
    return True


def is_floating_point(input):
    return input.dtype.is_floating_point


def is_complex(input):
    return input.dtype.is_complex


class finfo:
    """Numerical properties of a floating point ``ember.dtype`` (``torch.finfo``)."""

    def __init__(self, type=None):
        type = type or _default[0]
        if type.category not in (_FLOAT, _COMPLEX):
            raise TypeError(f"finfo expects a floating point dtype, got {type}")
        real = type.to_real().np
        if real.kind == "f":
            info = np.finfo(real)
        else:  # bfloat16 and the float8s: ml_dtypes is loaded once their .np is read
            import ml_dtypes
            info = ml_dtypes.finfo(real)
        self.dtype = type.to_real().name
        self.bits = info.bits
        self.eps = builtins.float(info.eps)
        self.max = builtins.float(info.max)
        self.min = builtins.float(info.min)
        self.tiny = self.smallest_normal = builtins.float(info.smallest_normal)
        # torch: 10 ** -digits10, the decimal digits the mantissa always holds (float8: 1.0,
        # where ml_dtypes' precision says 1)
        self.resolution = builtins.float(f"1e-{builtins.int(info.nmant * 0.30102999566398120)}")

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min:.6e}, max={self.max:.6e}, "
                f"eps={self.eps:.6e}, smallest_normal={self.tiny:.6e}, tiny={self.tiny:.6e}, "
                f"dtype={self.dtype})")


class iinfo:
    """Numerical properties of an integer ``ember.dtype`` (``torch.iinfo``)."""

    def __init__(self, type):
        if type.category != _INT:
            raise TypeError(f"{type} is not supported by ember.iinfo")
        info = np.iinfo(type.np)
        self.dtype = type.name
        self.bits = type.itemsize * 8
        self.max = builtins.int(info.max)
        self.min = builtins.int(info.min)

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
