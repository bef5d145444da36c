"""`assert_close`: torch.testing.assert_close's checks, tolerances and messages."""
import cmath
import collections.abc
import math

import numpy as np

from .._core import dtype as _dt
from .._core.tensor import Tensor

# (rtol, atol) by dtype; any other dtype compares exactly
_TOLERANCES = {
    _dt.float16: (1e-3, 1e-5), _dt.bfloat16: (1.6e-2, 1e-5), _dt.float32: (1.3e-6, 1e-5),
    _dt.float64: (1e-7, 1e-7), _dt.complex64: (1.3e-6, 1e-5), _dt.complex128: (1e-7, 1e-7),
}
_chalf = getattr(_dt, "complex32", None)
if _chalf is not None:
    _TOLERANCES[_chalf] = (1e-3, 1e-5)


class _Mismatch(Exception):
    """A failed check: ``kind`` is the exception type to raise, ``msg`` its message."""

    def __init__(self, msg, kind=AssertionError):
        super().__init__(msg)
        self.msg = msg
        self.kind = kind


def _default_tolerances(*dtypes):
    pairs = [_TOLERANCES.get(d, (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _tolerances(dtypes, rtol, atol):
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got "
                         f"no {'rtol' if rtol is None else 'atol'}.")
    if rtol is not None:
        return rtol, atol
    return _default_tolerances(*dtypes)


def _is_tensor_like(x):
    return isinstance(x, (Tensor, np.ndarray))


def _is_scalar(x):
    return isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic) or \
        isinstance(x, np.number)


# ---- scalars ----------------------------------------------------------------------------
_SCALAR_DTYPES = {bool: _dt.bool, int: _dt.int64, float: _dt.float64, complex: _dt.complex128}


def _compare_scalars(actual, expected, rtol, atol, equal_nan, check_dtype):
    if type(actual) is bool and type(expected) is bool:
        if actual is not expected:
            raise _Mismatch(f"Booleans mismatch: {actual} is not {expected}")
        return
    if check_dtype and type(actual) is not type(expected):
        raise _Mismatch(f"The (d)types do not match: {type(actual)} != {type(expected)}.")
    dts = [_SCALAR_DTYPES.get(type(v), _dt.float64) for v in (actual, expected)]
    rtol, atol = _tolerances(dts, rtol, atol)
    a, b = complex(actual), complex(expected)
    if a == b:
        return
    if equal_nan and cmath.isnan(a) and cmath.isnan(b):
        return
    diff = abs(a - b)
    if not (cmath.isnan(a) or cmath.isnan(b)) and not (cmath.isinf(a) or cmath.isinf(b)) and \
            diff <= atol + rtol * abs(b):
        return
    exact = rtol == 0 and atol == 0
    if isinstance(actual, (bool, int)) and isinstance(expected, (bool, int)):
        abs_s = str(int(diff))
    else:
        abs_s = str(diff)
    rel = diff / abs(b) if b != 0 else (math.nan if diff == 0 else math.inf)
    lines = [f"Scalars are not {'equal' if exact else 'close'}!", "",
             f"Expected {expected} but got {actual}.",
             f"Absolute difference: {abs_s}" + ("" if exact else f" (up to {atol} allowed)"),
             f"Relative difference: {rel}" + ("" if exact else f" (up to {rtol} allowed)")]
    raise _Mismatch("\n".join(lines))


# ---- tensors ----------------------------------------------------------------------------
def _as_tensor(x):
    if isinstance(x, np.ndarray):
        from ..ops.creation import from_numpy
        return from_numpy(np.ascontiguousarray(x) if not x.flags.writeable else x)
    return x


def _attr_mismatch(name, a, b):
    raise _Mismatch(f"The values for attribute '{name}' do not match: {a} != {b}.")


def _compare_tensors(actual, expected, rtol, atol, equal_nan, check_device, check_dtype,
                     check_stride):
    actual, expected = _as_tensor(actual), _as_tensor(expected)
    if actual.shape != expected.shape:
        _attr_mismatch("shape", repr(actual.shape), repr(expected.shape))
    if check_device and actual.device != expected.device:
        _attr_mismatch("device", repr(actual.device), repr(expected.device))
    if check_dtype and actual.dtype != expected.dtype:
        _attr_mismatch("dtype", repr(actual.dtype), repr(expected.dtype))
    if check_stride and actual.stride() != expected.stride():
        _attr_mismatch("stride()", actual.stride(), expected.stride())
    rtol, atol = _tolerances((actual.dtype, expected.dtype), rtol, atol)
    a = np.asarray(actual.detach().resolve_conj()._data)
    b = np.asarray(expected.detach().resolve_conj()._data)
    if a.dtype != b.dtype:
        common = _dt.promote_types(actual.dtype, expected.dtype).np
        a, b = a.astype(common), b.astype(common)
    if a.dtype.kind in "biu":
        a, b = a.astype(np.int64), b.astype(np.int64)
    # differences in the compared dtype (halves via float32, printed rounded back)
    half = a.dtype.kind == "V" or a.dtype == np.float16
    ca, cb = (a.astype(np.float32), b.astype(np.float32)) if half else (a, b)
    with np.errstate(all="ignore"):
        if ca.dtype.kind in "fc":
            close = np.isclose(ca, cb, rtol=rtol, atol=atol, equal_nan=equal_nan)
            # np.isclose treats equal infinities as close, as torch does; NaNs only if equal_nan
        else:
            close = np.abs(ca - cb) <= atol + rtol * np.abs(cb)
    if close.all():
        return
    if actual.dim() == 0:
        _compare_scalars(a.item(), b.item(), rtol, atol, equal_nan, False)
    exact = rtol == 0 and atol == 0
    flat_close = close.reshape(-1)
    with np.errstate(all="ignore"):
        abs_diff = np.abs(ca - cb).reshape(-1)
        if abs_diff.dtype.kind in "iu":
            abs_diff = abs_diff.astype(np.int64)
        abs_diff[flat_close] = 0
        rel_diff = (abs_diff / np.abs(cb).reshape(-1))
        rel_diff[flat_close] = 0
    if half:
        abs_diff = abs_diff.astype(a.dtype).astype(np.float32)
        rel_diff = rel_diff.astype(a.dtype).astype(np.float32)
    elif a.dtype == np.float32 or a.dtype == np.complex64 or a.dtype.kind in "biu":
        rel_diff = rel_diff.astype(np.float32)  # integers: torch divides in the default float
    n_bad = int((~flat_close).sum())
    total = close.size

    def greatest(d):
        nan = np.isnan(d) if d.dtype.kind == "f" else np.zeros(d.shape, bool)
        i = int(np.argmax(nan)) if nan.any() else int(np.argmax(d))
        idx = tuple(int(k) for k in np.unravel_index(i, close.shape))
        v = d[i]
        return (str(int(v)) if d.dtype.kind in "iu" else str(float(v))), idx
    abs_s, abs_i = greatest(abs_diff)
    rel_s, rel_i = greatest(rel_diff.astype(np.float64) if rel_diff.dtype.kind != "f" else
                            rel_diff)
    lines = [f"Tensor-likes are not {'equal' if exact else 'close'}!", "",
             f"Mismatched elements: {n_bad} / {total} ({n_bad / total:.1%})",
             f"Greatest absolute difference: {abs_s} at index {abs_i}" +
             ("" if exact else f" (up to {atol} allowed)"),
             f"Greatest relative difference: {rel_s} at index {rel_i}" +
             ("" if exact else f" (up to {rtol} allowed)")]
    raise _Mismatch("\n".join(lines))


# ---- structure --------------------------------------------------------------------------
def _item(path):
    return "".join(f"[{k!r}]" for k in path)


def _compare(actual, expected, path, opts):
    if actual is None and expected is None:
        return
    if _is_tensor_like(actual) and _is_tensor_like(expected) and \
            isinstance(actual, Tensor) == isinstance(expected, Tensor):
        _compare_tensors(actual, expected, opts["rtol"], opts["atol"], opts["equal_nan"],
                         opts["check_device"], opts["check_dtype"], opts["check_stride"])
        return
    if _is_scalar(actual) and _is_scalar(expected):
        _compare_scalars(actual, expected, opts["rtol"], opts["atol"], opts["equal_nan"],
                         opts["check_dtype"])
        return
    seq = (collections.abc.Sequence,)
    if isinstance(actual, seq) and isinstance(expected, seq) and \
            not isinstance(actual, str) and not isinstance(expected, str):
        if len(actual) != len(expected):
            raise _Mismatch(f"The length of the sequences mismatch: {len(actual)} != "
                            f"{len(expected)}")
        for i, (a, b) in enumerate(zip(actual, expected)):
            _compare_item(a, b, path + (i,), opts)
        return
    if isinstance(actual, collections.abc.Mapping) and \
            isinstance(expected, collections.abc.Mapping):
        ka, kb = set(actual), set(expected)
        if ka != kb:
            missing = sorted(kb - ka, key=repr)
            extra = sorted(ka - kb, key=repr)
            raise _Mismatch(f"The keys of the mappings do not match:\n"
                            f"Missing keys in the actual mapping: {missing}\n"
                            f"Additional keys in the actual mapping: {extra}")
        for k in sorted(ka, key=repr):
            _compare_item(actual[k], expected[k], path + (k,), opts)
        return
    raise _Mismatch(f"No comparison pair was able to handle inputs of type {type(actual)} and "
                    f"{type(expected)}.", TypeError)


def _compare_item(actual, expected, path, opts):
    try:
        _compare(actual, expected, path, opts)
    except _Mismatch as e:
        if getattr(e, "path", None) is None:
            e.path = path
        raise


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Asserts that ``actual`` and ``expected`` are close: tensors (or NumPy arrays),
    Python scalars, or sequences and mappings of them, compared elementwise as
    ``|actual - expected| <= atol + rtol * |expected|`` with dtype-dependent defaults."""
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got "
                         f"no {'rtol' if rtol is None else 'atol'}.")
    opts = dict(rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device,
                check_dtype=check_dtype, check_stride=check_stride)
    try:
        _compare(actual, expected, (), opts)
    except _Mismatch as e:
        if e.kind is not AssertionError:
            raise e.kind(e.msg) from None
        text = e.msg
        path = getattr(e, "path", None)
        if path:
            text += f"\n\nThe failure occurred for item {_item(path)}"
        if callable(msg):
            text = msg(text)
        elif msg is not None:
            text = msg
        raise AssertionError(text) from None
