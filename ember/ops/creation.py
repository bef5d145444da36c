"""Tensor creation: tensor, as_tensor, from_numpy, zeros/ones/empty/full (+_like),
arange, linspace, logspace, eye.

Creation functions take ``dtype``, ``device`` and ``requires_grad`` as PyTorch's do;
Python data infers torch's dtypes (floats -> the default dtype, ints -> int64).
"""
import builtins
import math

import numpy as np

from .._core.dispatch import overridable
from .._core import dtype as _dt
from .._core.device import DEFAULT_DEVICE, device as _device, get_backend
from .._core.tensor import Tensor, wrap
from ._scalar_check import check_scalar_fits

__all__ = ["tensor", "as_tensor", "asarray", "from_numpy", "zeros", "ones", "empty", "full",
           "zeros_like", "ones_like", "empty_like", "full_like", "arange", "range", "linspace",
           "logspace", "eye", "scalar_tensor", "empty_strided", "frombuffer"]


def _infer_dtype(data):
    """torch's dtype for Python data: the widest category present among the leaves."""
    cat = -1
    stack = [data]
    np_dtype = None
    while stack:
        x = stack.pop()
        if isinstance(x, Tensor):
            d = x.dtype
            c = d.category
            if c > cat or (c == cat and np_dtype is not None):
                np_dtype = d if np_dtype is None or c > cat else _dt.promote_types(np_dtype, d)
            cat = max(cat, c)
        elif isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, np.ndarray) or isinstance(x, np.generic):
            d = _dt.from_np(x.dtype)
            np_dtype = d if np_dtype is None else _dt.promote_types(np_dtype, d)
            cat = max(cat, d.category)
        elif isinstance(x, builtins.bool):
            cat = max(cat, 0)
        elif isinstance(x, int):
            cat = max(cat, 1)
        elif isinstance(x, float):
            cat = max(cat, 2)
        elif isinstance(x, complex):
            cat = max(cat, 3)
        else:
            raise TypeError(f"Could not infer dtype of {type(x).__name__}")
    py = {-1: _dt.get_default_dtype(), 0: _dt.bool, 1: _dt.int64, 2: _dt.get_default_dtype(),
          3: _dt.default_complex_dtype()}[cat]
    if np_dtype is not None and np_dtype.category >= cat:
        return np_dtype
    return py


def _to_nested(data):
    if isinstance(data, Tensor):
        return data._data
    if isinstance(data, (list, tuple)):
        return [_to_nested(x) for x in data]
    return data


def _finish(arr, device, requires_grad):
    if device is None:
        device = DEFAULT_DEVICE[0]  # set_default_device / ``with ember.device(...)``
    if device is not None:
        d = _device(device)
        if d.type != "cpu":
            arr = get_backend(d.type).from_host(arr)
    t = wrap(arr)
    if requires_grad:
        t.requires_grad_(True)
    return t


@overridable
def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """Constructs a tensor with no autograd history by copying ``data``."""
    if isinstance(data, Tensor):
        import warnings
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.clone().detach() or sourceTensor.clone().detach()."
                      "requires_grad_(True), rather than ember.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
    if dtype is None:
        dtype = _infer_dtype(data)
    try:
        arr = np.array(_to_nested(data), dtype=dtype.np)
    except ValueError as e:
        raise ValueError(f"expected sequence of equal-length lists: {e}") from None
    return _finish(arr, device, requires_grad)


@overridable
def as_tensor(data, dtype=None, device=None):
    """Converts ``data`` to a tensor, sharing memory where possible (tensors, ndarrays)."""
    if isinstance(data, Tensor):
        t = data
        if dtype is not None and dtype is not t.dtype:
            t = t.to(dtype)
        if device is not None:
            t = t.to(device)
        return t
    if isinstance(data, np.ndarray) and (dtype is None or data.dtype == dtype.np):
        _dt.from_np(data.dtype)
        return _finish(data, device, False)
    return tensor(data, dtype=dtype, device=device)


@overridable
def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """Converts ``obj`` to a tensor, sharing memory unless ``copy=True`` (array-API style)."""
    if copy:
        t = tensor(obj if not isinstance(obj, Tensor) else obj.detach().clone(), dtype=dtype,
                   device=device)
    else:
        t = as_tensor(obj, dtype=dtype, device=device)
    if requires_grad:
        t.requires_grad_(True)
    return t


@overridable
def from_numpy(ndarray):
    """A tensor sharing memory with ``ndarray`` (writes to either are seen by both)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    _dt.from_np(ndarray.dtype)
    return wrap(ndarray)


@overridable
def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor viewing a Python buffer."""
    return _finish(np.frombuffer(buffer, dtype=dtype.np, count=count, offset=offset), None,
                   requires_grad)


def _size(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for i, s in enumerate(size):
        if not isinstance(s, (int, np.integer)) and not (isinstance(s, Tensor) and s.numel() == 1):
            raise TypeError(f"size must be a tuple of ints, but got {type(s).__name__}")
        if not -(1 << 63) <= int(s) < (1 << 63):
            raise TypeError(f"argument 'size' failed to unpack the object at pos {i} with error "
                            f"\"Overflow when unpacking long long\"")
    for s in size:
        if int(s) < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {int(s)}: "
                               f"{[int(x) for x in size]}")
    shape = tuple(int(s) for s in size)
    # numel * itemsize (up to 16 bytes) past int64 is torch's overflow error; NumPy would
    # raise ValueError("array is too big")
    if 0 not in shape and math.prod(shape) >= (1 << 59):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)}")
    return shape


def _size_kw(size, kw, name):
    """``size=`` given as a keyword, as torch allows for its creation functions."""
    if kw:
        if set(kw) != {"size"} or size:
            raise TypeError(f"{name}() received an invalid combination of arguments: "
                            f"{sorted(kw)}")
        return (tuple(kw["size"]),)
    if not size:  # torch needs a size, even for a 0-dim result (pass ())
        raise TypeError(f'{name}() missing 1 required positional arguments: "size"')
    return size


def _dtype_or_default(dtype):
    return (dtype or _dt.get_default_dtype()).np


@overridable
def zeros(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False, **kw):
    """A tensor filled with 0 of shape ``size``."""
    return _filled(np.zeros, _size_kw(size, kw, "zeros"), out, dtype, device, requires_grad)


@overridable
def ones(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False, **kw):
    """A tensor filled with 1 of shape ``size``."""
    return _filled(np.ones, _size_kw(size, kw, "ones"), out, dtype, device, requires_grad)


@overridable
def empty(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False, memory_format=None, **kw):
    """An uninitialised tensor of shape ``size``."""
    return _filled(np.empty, _size_kw(size, kw, "empty"), out, dtype, device, requires_grad)


def _filled(fn, size, out, dtype, device, requires_grad):
    shape = _size(size)
    if out is not None:
        from .._core.dispatch import write_out
        return write_out(out, wrap(fn(shape, dtype=out._data.dtype)))
    return _finish(fn(shape, dtype=_dtype_or_default(dtype)), device, requires_grad)


@overridable
def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False):
    """An uninitialised tensor with the given strides (elements, not bytes)."""
    dt = _dtype_or_default(dtype)
    n = 1 + builtins.sum((s - 1) * st for s, st in zip(size, stride)) if all(size) else 0
    buf = np.empty(max(n, 0), dtype=dt)
    arr = np.lib.stride_tricks.as_strided(buf, tuple(size), tuple(st * dt.itemsize for st in stride))
    return _finish(arr, device, requires_grad)


@overridable
def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None,
         requires_grad=False):
    """A tensor of shape ``size`` filled with ``fill_value`` (dtype inferred from it)."""
    if dtype is None:
        dtype = _infer_dtype(fill_value)
    check_scalar_fits(fill_value, dtype.np)
    shape = _size((size,))
    return _finish(np.full(shape, _c_cast(fill_value, dtype.np), dtype=dtype.np), device,
                   requires_grad)


def _c_cast(value, dt):
    """``value`` converted to ``dt`` the C way torch does (-1 in uint8 is 255), where NumPy
    refuses out-of-range Python ints."""
    if isinstance(value, int) and not isinstance(value, bool) and dt.kind in "iu":
        return np.array(value, dtype=np.int64 if value < (1 << 63) else np.uint64).astype(dt)
    return value


@overridable
def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    return _finish(np.asarray(s, dtype=_dtype_or_default(dtype)), device, requires_grad)


def _like(fn, input, dtype, device, requires_grad, *args):
    dt = (dtype.np if dtype is not None else input._data.dtype)
    arr = fn(input._data.shape, *args, dtype=dt) if args else fn(input._data.shape, dtype=dt)
    return _finish(arr, device if device is not None else (
        None if input.device.type == "cpu" else input.device), requires_grad)


@overridable
def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None):
    return _like(np.zeros, input, dtype, device, requires_grad)


@overridable
def ones_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None):
    return _like(np.ones, input, dtype, device, requires_grad)


@overridable
def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None):
    return _like(np.empty, input, dtype, device, requires_grad)


@overridable
def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None):
    check_scalar_fits(fill_value, dtype.np if dtype is not None else input._data.dtype)
    return _like(lambda shape, dtype: np.full(shape, _c_cast(fill_value, dtype), dtype=dtype),
                 input, dtype, device, requires_grad)


def _num(x):
    return x.item() if isinstance(x, Tensor) else x


@overridable
def arange(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
           requires_grad=False):
    """Values in [start, end) with spacing ``step``; int64 unless a bound is a float."""
    start, end, step = _num(start), _num(end), _num(step)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    if dtype is None:
        dtype = _dt.int64 if all(isinstance(v, (int, np.integer)) for v in (start, end, step)) \
            else _dt.get_default_dtype()
    n = builtins.max(0, math.ceil((end - start) / step))
    if dtype.is_floating_point or dtype.is_complex:
        arr = (start + np.arange(n, dtype=np.float64) * step).astype(dtype.np)
    else:
        arr = np.arange(start, start + n * step, step, dtype=np.int64)[:n].astype(dtype.np)
    r = _finish(arr, device, requires_grad)
    if out is not None:
        from .._core.dispatch import write_out
        return write_out(out, r)
    return r


@overridable
def range(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """Deprecated inclusive range (``torch.range``): values in [start, end]."""
    if end is None:
        start, end = 0, start
    n = int(math.floor((end - start) / step)) + 1
    arr = (start + np.arange(n, dtype=np.float64) * step).astype(_dtype_or_default(dtype))
    return _finish(arr, device, requires_grad)


@overridable
def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False):
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    start, end = _num(start), _num(end)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dt = _dtype_or_default(dtype) if dtype or not any(isinstance(v, complex) for v in (start, end)) \
        else _dt.default_complex_dtype().np
    arr = np.linspace(start, end, steps, dtype=np.float64 if dt.kind != "c" else np.complex128)
    if dt.kind in "iu":
        arr = np.trunc(arr)
    return _finish(arr.astype(dt), device, requires_grad)


@overridable
def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False):
    """``steps`` values from ``base**start`` to ``base**end``, evenly spaced in log scale."""
    arr = np.power(base, np.linspace(_num(start), _num(end), steps, dtype=np.float64))
    return _finish(arr.astype(_dtype_or_default(dtype)), device, requires_grad)


@overridable
def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """A 2-D tensor with ones on the diagonal and zeros elsewhere."""
    if n < 0 or (m is not None and m < 0):
        raise RuntimeError(f"n must be greater or equal to 0, got {n if n < 0 else m}")
    return _finish(np.eye(n, m, dtype=_dtype_or_default(dtype)), device, requires_grad)


Tensor.new_tensor = lambda self, data, *, dtype=None, device=None, requires_grad=False: tensor(
    data, dtype=dtype or self.dtype, device=device, requires_grad=requires_grad)
Tensor.new_zeros = lambda self, *size, dtype=None, device=None, requires_grad=False: zeros(
    *size, dtype=dtype or self.dtype, device=device, requires_grad=requires_grad)
Tensor.new_ones = lambda self, *size, dtype=None, device=None, requires_grad=False: ones(
    *size, dtype=dtype or self.dtype, device=device, requires_grad=requires_grad)
Tensor.new_empty = lambda self, *size, dtype=None, device=None, requires_grad=False: empty(
    *size, dtype=dtype or self.dtype, device=device, requires_grad=requires_grad)
Tensor.new_full = lambda self, size, fill_value, *, dtype=None, device=None, \
    requires_grad=False: full(size, fill_value, dtype=dtype or self.dtype, device=device,
                              requires_grad=requires_grad)


def _fill_(self, value):
    from .conversion import COPY
    from .._core.dispatch import apply_inplace
    if isinstance(value, Tensor) and value.dim() != 0:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                           f"{value.dim()} dimensions.")
    check_scalar_fits(value, self._data.dtype)
    return apply_inplace(COPY, self, (value,), {})


def _zero_(self):
    return _fill_(self, 0)


Tensor.fill_ = _fill_
Tensor.zero_ = _zero_
