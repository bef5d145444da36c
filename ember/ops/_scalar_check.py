"""torch's overflow check for a Python scalar written into a tensor of a given dtype.

``fill_``, ``full``, ``masked_fill``, ``index_fill`` and ``t[i] = v`` convert their scalar
with torch's ``checked_convert``: a value the destination type cannot hold raises
RuntimeError "value cannot be converted to type int32 without overflow" instead of
wrapping around silently (NumPy's unsafe cast would store 0 for ``2**40`` in int32).
"""
import numbers

import numpy as np

__all__ = ["check_scalar_fits"]

# torch's C++ type names, as its message prints them
_CNAMES = {"int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "int32": "int",
           "int64": "int64_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
           "float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float",
           "float64": "double", "complex64": "c10::complex<float>",
           "complex128": "c10::complex<double>"}
_INT64 = (-(1 << 63), (1 << 63) - 1)


def _overflow(name):
    return RuntimeError(f"value cannot be converted to type {_CNAMES.get(name, name)} without "
                        f"overflow")


def _real_limits(dt):
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return int(info.min), int(info.max)
    if dt.kind == "c":
        dt = np.dtype(np.float32 if dt.itemsize == 8 else np.float64)
    if dt.kind == "V":  # bfloat16 and float8 come from ml_dtypes, which has its own finfo
        import ml_dtypes
        info = ml_dtypes.finfo(dt)
    else:
        info = np.finfo(dt)
    return float(info.min), float(info.max)


def check_scalar_fits(value, dtype, *, check_float_range=True):
    """Raise torch's error if Python scalar ``value`` overflows NumPy dtype ``dtype``.

    Tensors and non-numbers pass through unchecked (their casts follow torch's tensor
    copy rules). ``check_float_range=False`` skips the range test for floating
    destinations (torch's ``t[i] = v`` on half types goes through double and saturates).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Number) or \
            isinstance(value, np.ndarray):
        return value
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return value
    if isinstance(value, numbers.Integral):
        v = int(value)
        if not _INT64[0] <= v <= _INT64[1] and not (dt.kind == "u" and v <= (1 << 64) - 1):
            raise OverflowError("int too big to convert")
    if isinstance(value, numbers.Complex) and not isinstance(value, numbers.Real):
        c = complex(value)
        if dt.kind == "c":
            value_parts = (c.real, c.imag)
        elif c.imag != 0:
            raise _overflow(dt.name)
        else:
            value_parts = (c.real,)
    else:
        value_parts = (value,)
    lo, hi = _real_limits(dt)
    for v in value_parts:
        if dt.kind in "iu":
            if isinstance(v, numbers.Integral):
                v = int(v)
            else:
                v = float(v)
                if v != v or v in (float("inf"), float("-inf")):
                    raise _overflow(dt.name)
            # unsigned destinations accept negative integers down to -max (they wrap, as in
            # C), but no negative float
            low = -hi if dt.kind == "u" and isinstance(v, int) else lo
            if not low <= v <= hi:
                raise _overflow(dt.name)
        elif check_float_range:
            v = float(v)
            if v == v and abs(v) != float("inf") and not lo <= v <= hi:
                raise _overflow(dt.name)
    return value
