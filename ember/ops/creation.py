"""Tensor creation: tensor, as_tensor, from_numpy, zeros/ones/empty/full (+_like),
arange, linspace, logspace, eye.

Creation functions take ``dtype``, ``device`` and ``requires_grad`` as PyTorch's do;
Python data infers torch's dtypes (floats -> the default dtype, ints -> int64).

Every factory that computes values is an operator without tensor inputs (``full``,
``empty``, ``empty_strided``, ``arange``, ``range``, ``linspace``, ``logspace``, ``eye``,
``tensor``): its params say everything -- the shape (whose shape rule uses plain size
arithmetic, so it may hold symbolic sizes), the values, the dtype (a NumPy dtype, as the
random samplers take it) and the device -- so dispatch modes see every creation and a
trace can replay it.  ``zeros``/``ones``/``scalar_tensor`` and the ``*_like`` forms are
``full`` calls.  Functions that only wrap existing memory (``from_numpy``, ``as_tensor``
of an ndarray, ``frombuffer``) compute nothing and stay outside the dispatcher.
"""
import builtins
import collections.abc
import math

import numpy as np

from .._core.dispatch import apply, apply_meta, overridable
from .._core import dtype as _dt
from .._core import layout as _layout
from .._core import meta as _meta
from .._core.deterministic import fill_uninitialized
from .._core.number_args import number_arg
from .._core.device import DEFAULT_DEVICE, device as _device, get_backend
from .._core.op import Op
from .._core.tensor import Tensor, wrap
from ._scalar_check import check_scalar_fits
from .random_streams import _fma32, _fma64

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
        elif _is_sequence(x):
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
        elif isinstance(x, str):
            raise TypeError("new(): invalid data type 'str'")
        else:
            raise RuntimeError(f"Could not infer dtype of {type(x).__name__}")
    py = {-1: _dt.get_default_dtype(), 0: _dt.bool, 1: _dt.int64, 2: _dt.get_default_dtype(),
          3: _dt.default_complex_dtype()}[cat]
    if np_dtype is not None and np_dtype.category >= cat:
        return np_dtype
    return py


def _is_sequence(x):
    # torch reads any Python sequence (deque, range, array.array, ...) as nested data;
    # a str is refused as data, not walked
    return isinstance(x, (list, tuple)) or (
        isinstance(x, collections.abc.Sequence) and not isinstance(x, (str, bytes)))


def _to_nested(data):
    if isinstance(data, Tensor):
        return data._data
    if _is_sequence(data):
        return [_to_nested(x) for x in data]
    return data


# ---- the factory operators ---------------------------------------------------------------

def _on(arr, device):
    """``arr``, built on the host, on ``device``'s backend (None or 'cpu' keeps it)."""
    if device is None or device.type == "cpu":
        return arr
    return get_backend(device.type).from_host(arr)


def _positive_zero(v):
    """``v`` is +0 (complex parts included): -0.0 must keep its sign bit, as torch's does."""
    if v != 0:
        return False
    c = complex(v)
    return math.copysign(1.0, c.real) > 0 and math.copysign(1.0, c.imag) > 0


def _full_kernel(xp, *, shape, fill_value, dtype, device=None):
    if _positive_zero(fill_value):
        arr = xp.zeros(shape, dtype=dtype)  # calloc'd: large zero tensors cost no writes
    else:
        arr = xp.full(shape, _c_cast(fill_value, np.dtype(dtype)), dtype=dtype)
    return arr if device is None else _on(arr, device)


def _empty_kernel(xp, *, shape, dtype, device=None):
    return _on(fill_uninitialized(xp.empty(shape, dtype=dtype)), device)


def _empty_strided_kernel(xp, *, size, stride, dtype, device=None):
    dt = np.dtype(dtype)
    n = 1 + builtins.sum((s - 1) * st for s, st in zip(size, stride)) if all(size) else 0
    buf = fill_uninitialized(xp.empty(builtins.max(n, 0), dtype=dt))
    return _on(xp.lib.stride_tricks.as_strided(buf, tuple(size),
                                               tuple(st * dt.itemsize for st in stride)), device)


def _is_float(v):
    return type(v) is float or isinstance(v, np.floating)


def _arange_len(start, end, step):
    """Number of values of ``arange``: exact integer arithmetic for integer bounds (which
    symbolic sizes support too), ``ceil`` of the float quotient otherwise."""
    if _is_float(start) or _is_float(end) or _is_float(step):
        return builtins.max(0, math.ceil((end - start) / step))
    n = (end - start + step - 1) // step if step > 0 else (start - end - step - 1) // -step
    return builtins.max(0, n) if isinstance(n, (int, np.integer)) else n


def _arange_kernel(xp, *, start, end, step, dtype, device=None):
    n = int(_arange_len(start, end, step))
    dt = np.dtype(dtype)
    if dt.kind not in "iub":  # floating, complex, and the ml_dtypes floats (kind 'V')
        arr = (start + xp.arange(n, dtype=np.float64) * step).astype(dt)
    else:
        arr = xp.arange(start, start + n * step, step, dtype=np.int64)[:n].astype(dt)
    return _on(arr, device)


def _range_len(start, end, step):
    if _is_float(start) or _is_float(end) or _is_float(step):
        return int(math.floor((end - start) / step)) + 1
    return (end - start) // step + 1


def _range_kernel(xp, *, start, end, step, dtype, device=None):
    n = _range_len(start, end, step)
    return _on((start + xp.arange(n, dtype=np.float64) * step).astype(dtype), device)


def _scalar_as(value, dt):
    """``value`` converted to ``dt`` as torch's ``Scalar.to<T>()``: ints truncate a float
    toward zero."""
    if dt.kind in "iu":  # a negative value wraps into an unsigned type, as in C
        v = math.trunc(value.real if isinstance(value, complex) else value)
        return np.array(v, np.int64 if v < 0 else np.uint64).astype(dt)[()]
    return dt.type(value)


def _spaced_index(xp, steps, dt):
    """Index ``i`` and its mirror ``steps - 1 - i`` in ``dt``, with the mask of the first
    half: torch counts the first half up from ``start`` and the second down from ``end``,
    so both ends are exact and the sequence is symmetric."""
    i = xp.arange(steps, dtype=np.int64)
    return i.astype(dt), (steps - 1 - i).astype(dt), i < steps // 2


def _linspace_real(xp, start, end, steps, dt):
    # torch's CPU kernel, in the output dtype (ints step in float64 and truncate), bit for
    # bit: float32/float64 as ``start + step * i`` in one fused multiply-add (its kernel is
    # compiled with FMA contraction), halves rounding after each operation
    ct = np.dtype(np.float64) if dt.kind in "iu" else dt
    s, e = _scalar_as(start, dt), _scalar_as(end, dt)
    s, e = ct.type(s), ct.type(e)
    step = (e - s) / ct.type(steps - 1)
    up, down, first = _spaced_index(xp, steps, ct)
    if ct.kind == "f" and ct.itemsize >= 4:
        fma = _fma32 if ct.itemsize == 4 else _fma64
        arr = xp.where(first, fma(up, step, s), fma(down, -step, e))
    else:
        arr = xp.where(first, s + step * up, e - step * down)
    return arr.astype(dt)


def _linspace_kernel(xp, *, start, end, steps, dtype, device=None):
    dt = np.dtype(dtype)
    if steps == 1:
        return _on(xp.full(1, _scalar_as(start, dt), dtype=dt), device)
    if dt.kind == "c":  # torch steps a complex by a real count: parts independently
        real = np.dtype(np.float32 if dt.itemsize == 8 else np.float64)
        start, end = complex(start), complex(end)
        arr = xp.empty(steps, dtype=dt)
        arr.real = _linspace_real(xp, start.real, end.real, steps, real)
        arr.imag = _linspace_real(xp, start.imag, end.imag, steps, real)
        return _on(arr, device)
    return _on(_linspace_real(xp, start, end, steps, dt), device)


def _logspace_kernel(xp, *, start, end, steps, base, dtype, device=None):
    dt = np.dtype(dtype)
    if dt.kind == "c":
        arr = xp.power(base, xp.linspace(start, end, steps, dtype=np.complex128))
        return _on(arr.astype(dt), device)
    if steps == 1:
        # torch fills it, with fill_'s conversion check (halves fill through float: no check)
        value = _libpow(float(base), float(start))
        check_scalar_fits(value, dt, check_float_range=dt.kind != "V" and dt.itemsize >= 4)
        return _on(_from_double(xp.full(1, value), dt), device)
    # torch: the exponents in float64 from start/end as ``dt`` holds them (an int
    # difference is taken in ints), the power in float64, then one cast
    s, e = _scalar_as(start, dt), _scalar_as(end, dt)
    step = float(int(e) - int(s) if dt.kind in "iu" else e - s) / (steps - 1)
    up, down, first = _spaced_index(xp, steps, np.dtype(np.float64))
    expo = xp.where(first, float(s) + step * up, float(e) - step * down)
    # the C library's pow, as torch calls it (NumPy's vectorised power differs in the last
    # bit for some inputs)
    base = float(base)
    arr = np.fromiter((_libpow(base, x) for x in expo.tolist()), np.float64, steps)
    return _on(_from_double(xp.asarray(arr), dt), device)


def _libpow(base, x):
    try:
        return math.pow(base, x)
    except OverflowError:
        return math.inf
    except ValueError:  # a negative base to a fractional power
        return math.nan


def _from_double(arr, dt):
    """A float64 array stored into ``dt`` as C++ converts: halves through float32, narrow
    ints through int32 (wrapping as the hardware conversion does)."""
    if dt.kind == "f" and dt.itemsize < 4 or dt.kind == "V":
        arr = arr.astype(np.float32)
    elif dt.kind in "iu" and dt.itemsize < 4:
        with np.errstate(invalid="ignore"):
            arr = arr.astype(np.int32)
    with np.errstate(over="ignore", invalid="ignore"):
        return arr.astype(dt)


def _eye_kernel(xp, *, n, m, dtype, device=None):
    return _on(xp.eye(n, m, dtype=dtype), device)


def _tensor_kernel(xp, *, data, dtype, device=None):
    try:
        arr = xp.array(data, dtype=dtype)
    except ValueError as e:
        if "out of bounds" in str(e) or "overflow" in str(e):
            raise
        raise ValueError(f"expected sequence of equal-length lists: {e}") from None
    return _on(arr, device)


def _shaped(*, shape, dtype, **params):
    return tuple(shape), _meta.as_dtype(dtype)


def _data_shape(data):
    """Shape of nested Python data (lists/tuples whose leaves are scalars or arrays)."""
    if isinstance(data, (list, tuple)):
        return (len(data),) + (_data_shape(data[0]) if data else ())
    return tuple(getattr(data, "shape", ()))


_NO_INPUTS = {"vjp": "a factory has no tensor inputs", "jvp": "a factory has no tensor inputs",
              "batch": "a factory has no tensor inputs, so vmap never batches it"}


def _factory(name, kernel, rule):
    return Op(name, kernel, None, differentiable=False, save_inputs=False, shape=rule,
              unsupported=_NO_INPUTS, doc=kernel.__doc__)


FULL = _factory("full", _full_kernel, _shaped)
EMPTY = _factory("empty", _empty_kernel, _shaped)
EMPTY_STRIDED = _factory("empty_strided", _empty_strided_kernel,
                         lambda *, size, stride, dtype, **p: (tuple(size), _meta.as_dtype(dtype)))
ARANGE = _factory("arange", _arange_kernel, lambda *, start, end, step, dtype, **p: (
    (_arange_len(start, end, step),), _meta.as_dtype(dtype)))
RANGE = _factory("range", _range_kernel, lambda *, start, end, step, dtype, **p: (
    (_range_len(start, end, step),), _meta.as_dtype(dtype)))
LINSPACE = _factory("linspace", _linspace_kernel,
                    lambda *, steps, dtype, **p: ((steps,), _meta.as_dtype(dtype)))
LOGSPACE = _factory("logspace", _logspace_kernel,
                    lambda *, steps, dtype, **p: ((steps,), _meta.as_dtype(dtype)))
EYE = _factory("eye", _eye_kernel, lambda *, n, m, dtype, **p: (
    (n, n if m is None else m), _meta.as_dtype(dtype)))
TENSOR = _factory("tensor", _tensor_kernel,
                  lambda *, data, dtype, **p: (_data_shape(data), _meta.as_dtype(dtype)))


def _device_param(device):
    """The ``device`` param of a factory: the given device, else the default one (None: the
    CPU, with no per-call cost)."""
    if device is None:
        device = DEFAULT_DEVICE[0]
        if device is None:
            return None
    return device if type(device) is _device else _device(device)


def _make(op, params, device, requires_grad):
    d = params["device"] = None if device is None and DEFAULT_DEVICE[0] is None else \
        _device_param(device)
    t = apply(op, (), params) if d is None or d.type != "meta" else apply_meta(op, (), params)
    if requires_grad:
        t._set_requires_grad(True)
    return t


def _finish(arr, device, requires_grad):
    if device is None:
        device = DEFAULT_DEVICE[0]  # set_default_device / ``with ember.device(...)``
    if device is not None:
        d = _device(device)
        if d.type != "cpu":
            arr = get_backend(d.type).from_host(arr)
    t = wrap(arr)
    if requires_grad:
        t._set_requires_grad(True)
    return t


@overridable
def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """Constructs a tensor with no autograd history by copying ``data``."""
    _check_pin(pin_memory)
    if isinstance(data, Tensor):
        import warnings
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.clone().detach() or sourceTensor.clone().detach()."
                      "requires_grad_(True), rather than ember.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
    if dtype is None:
        dtype = _infer_dtype(data)
    return _make(TENSOR, {"data": _to_nested(data), "dtype": dtype.np}, device, requires_grad)


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
        return _finish(_plain(data), device, False)
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
        t._set_requires_grad(True)
    return t


@overridable
def from_numpy(ndarray):
    """A tensor sharing memory with ``ndarray`` (writes to either are seen by both)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    _dt.from_np(ndarray.dtype)
    return wrap(_plain(ndarray))


def _plain(a):
    """NumPy array ``a`` as a plain ndarray: a subclass (np.matrix, np.memmap) becomes a view
    of the same memory, as torch keeps only the buffer (writes still reach a memmap's file)."""
    return a if type(a) is np.ndarray else a.view(np.ndarray)


@overridable
def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor viewing a Python buffer."""
    return _finish(np.frombuffer(buffer, dtype=dtype.np, count=count, offset=offset), None,
                   requires_grad)


def _size(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for s in size:
        if type(s) is not int or s < 0 or s >= 1 << 31:
            break
    else:  # the common case: small non-negative ints, whose product cannot overflow int64
        return size if len(size) < 2 or math.prod(size) < 1 << 59 else _size_checked(size)
    return _size_checked(size)


def _size_checked(size):
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
    # int subclasses stay (ember.compile's symbolic sizes are ints that know their origin)
    shape = tuple(s if isinstance(s, int) and type(s) is not bool else int(s) for s in size)
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


def _check_pin(pin_memory):
    """A factory's ``pin_memory=True``: page-locked memory needs an accelerator (with one,
    ember's CPU memory serves as is)."""
    if pin_memory:
        from .._core.device import accelerator_name
        if accelerator_name() is None:
            raise RuntimeError("pin_memory=True requires a CUDA or other accelerator backend; "
                               "no pinned memory allocator is available on this system.")


def _dtype_or_default(dtype):
    return (dtype or _dt.get_default_dtype()).np


@overridable
def zeros(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False, **kw):
    """A tensor filled with 0 of shape ``size``."""
    _check_pin(pin_memory)
    return _filled(0, _size_kw(size, kw, "zeros"), out, dtype, device, requires_grad)


@overridable
def ones(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False, **kw):
    """A tensor filled with 1 of shape ``size``."""
    _check_pin(pin_memory)
    return _filled(1, _size_kw(size, kw, "ones"), out, dtype, device, requires_grad)


@overridable
def empty(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False, memory_format=None, **kw):
    """An uninitialised tensor of shape ``size``, laid out as ``memory_format`` (default
    row-major)."""
    _check_pin(pin_memory)
    t = _filled(None, _size_kw(size, kw, "empty"), out, dtype, device, requires_grad)
    if memory_format is None or out is not None:
        return t
    return _laid_out(t, t, memory_format)


def _laid_out(t, like, memory_format):
    """The fresh tensor ``t`` with its memory laid out as a copy of ``like`` in
    ``memory_format`` would be (``preserve_format``: ``like``'s layout)."""
    from .conversion import _clone_kernel, _layout_param
    param = _layout_param(like, memory_format)
    if param is None or type(t._data) is not np.ndarray:
        return t
    if param == "preserve" and type(like._data) is np.ndarray:
        out = np.empty_like(like._data, dtype=t.dtype.np)  # order "K": like's strides
        out[...] = t._data
        t._data = out
    else:
        t._data = _clone_kernel(np, t._data, param)
    return t


def _filled(value, size, out, dtype, device, requires_grad):
    """``full`` (``empty`` for value None) of shape ``size``, or written into ``out``."""
    shape = _size(size)
    params = {"shape": shape, "fill_value": value} if value is not None else {"shape": shape}
    op = FULL if value is not None else EMPTY
    if out is not None:
        from .._core.dispatch import write_out
        params["dtype"] = out.dtype.np
        params["device"] = None
        return write_out(out, apply(op, (), params))
    params["dtype"] = (dtype or _dt.get_default_dtype()).np
    return _make(op, params, device, requires_grad)


@overridable
def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False):
    """An uninitialised tensor with the given strides (elements, not bytes)."""
    return _make(EMPTY_STRIDED, {"size": tuple(size), "stride": tuple(stride),
                                 "dtype": _dtype_or_default(dtype)}, device, requires_grad)


@overridable
def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False):
    """A tensor of shape ``size`` filled with ``fill_value`` (dtype inferred from it)."""
    _check_pin(pin_memory)
    fill_value = number_arg(fill_value, "full", "fill_value", 2)
    if isinstance(fill_value, _dt.NUMPY_SCALARS):
        fill_value = _dt.python_scalar(fill_value)
    if dtype is None:
        dtype = _infer_dtype(fill_value)
    fill_value = _num(fill_value)
    check_scalar_fits(fill_value, dtype.np)
    shape = _size((size,))
    if out is not None:
        from .._core.dispatch import write_out
        return write_out(out, apply(FULL, (), {"shape": shape, "fill_value": fill_value,
                                               "dtype": dtype.np, "device": None}))
    return _make(FULL, {"shape": shape, "fill_value": fill_value, "dtype": dtype.np}, device,
                 requires_grad)


def _c_cast(value, dt):
    """``value`` converted to ``dt`` the C way torch does (-1 in uint8 is 255), where NumPy
    refuses out-of-range Python ints."""
    if isinstance(value, int) and not isinstance(value, bool) and dt.kind in "iu":
        return np.array(value, dtype=np.int64 if value < (1 << 63) else np.uint64).astype(dt)
    return value


@overridable
def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    s = _num(s)
    return _make(FULL, {"shape": (), "fill_value": s, "dtype": _dtype_or_default(dtype)}, device,
                 requires_grad)


def _like(value, input, dtype, device, requires_grad, memory_format=None):
    """``full`` (``empty`` for value None) with ``input``'s shape, dtype and device unless
    given; the shape comes from ``input.shape``, so symbolic sizes pass into the params."""
    dt = dtype.np if dtype is not None else input.dtype.np
    if device is None:
        device = input.device
        if device.type == "cpu" and DEFAULT_DEVICE[0] is None:
            device = None
    else:
        device = _device_param(device)
    run = apply if device is None or device.type != "meta" else apply_meta
    if value is None:
        t = run(EMPTY, (), {"shape": input.shape, "dtype": dt, "device": device})
    else:
        t = run(FULL, (), {"shape": input.shape, "fill_value": value, "dtype": dt,
                           "device": device})
    if requires_grad:
        t._set_requires_grad(True)
    if (type(input._data) is np.ndarray and not input._data.flags.c_contiguous) or (
            memory_format is not None and memory_format is not _layout.preserve_format):
        t = _laid_out(t, input, memory_format)  # preserve (default): input's layout
    return t


@overridable
def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None):
    return _like(0, input, dtype, device, requires_grad, memory_format)


@overridable
def ones_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None):
    return _like(1, input, dtype, device, requires_grad, memory_format)


@overridable
def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None):
    return _like(None, input, dtype, device, requires_grad, memory_format)


@overridable
def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None):
    fill_value = number_arg(fill_value, "full_like", "fill_value", 2)
    check_scalar_fits(fill_value, dtype.np if dtype is not None else input.dtype.np)
    return _like(_num(fill_value), input, dtype, device, requires_grad, memory_format)


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
    r = _make(ARANGE, {"start": start, "end": end, "step": step, "dtype": dtype.np}, device,
              requires_grad)
    if out is not None:
        from .._core.dispatch import write_out
        return write_out(out, r)
    return r


@overridable
def range(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """Deprecated inclusive range (``torch.range``): values in [start, end]."""
    if end is None:
        start, end = 0, start
    return _make(RANGE, {"start": start, "end": end, "step": step,
                         "dtype": _dtype_or_default(dtype)}, device, requires_grad)


def _check_bounds(start, end, steps, dt, first):
    """torch's conversion check of the bounds into ``dt``: both when the sequence steps, only
    ``start`` (``first``) when one value is filled in; complex bounds need a complex dtype."""
    if np.dtype(dt).kind != "c" and any(isinstance(v, complex) for v in (start, end)):
        from .blas import cpp_name
        from ._helpers import type_name
        raise RuntimeError(f"torch.{'linspace' if first else 'logspace'}(): inferred dtype "
                           f"{cpp_name(_dt.default_complex_dtype().np)} can't be safely cast "
                           f"to passed dtype {type_name(dt)}")
    if steps > 1 or steps == 1 and first:
        check_scalar_fits(start, dt)
    if steps > 1:
        check_scalar_fits(end, dt)


@overridable
def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False):
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    start, end = _num(start), _num(end)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    if dtype is None and out is not None:
        dtype = out.dtype
    dt = _dtype_or_default(dtype) if dtype or not any(isinstance(v, complex) for v in (start, end)) \
        else _dt.default_complex_dtype().np
    if dt == np.bool_:
        raise NotImplementedError("\"linspace_cpu\" not implemented for 'Bool'")
    _check_bounds(start, end, steps, dt, first=True)
    return _to_out(_make(LINSPACE, {"start": start, "end": end, "steps": int(steps), "dtype": dt},
                         device, requires_grad), out)


@overridable
def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False):
    """``steps`` values from ``base**start`` to ``base**end``, evenly spaced in log scale."""
    if dtype is None and out is not None:
        dtype = out.dtype
    start, end = _num(start), _num(end)
    dt = _dtype_or_default(dtype) if dtype or not any(isinstance(v, complex) for v in (start, end)) \
        else _dt.default_complex_dtype().np
    _check_bounds(start, end, steps, dt, first=False)
    return _to_out(_make(LOGSPACE, {"start": start, "end": end, "steps": int(steps),
                                    "base": base, "dtype": dt}, device, requires_grad), out)


@overridable
def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """A 2-D tensor with ones on the diagonal and zeros elsewhere."""
    if n < 0 or (m is not None and m < 0):
        raise RuntimeError(f"n must be greater or equal to 0, got {n if n < 0 else m}")
    if dtype is None and out is not None:
        dtype = out.dtype
    return _to_out(_make(EYE, {"n": n, "m": m, "dtype": _dtype_or_default(dtype)}, device,
                         requires_grad), out)


def _to_out(r, out):
    if out is None:
        return r
    from .._core.dispatch import write_out
    return write_out(out, r)


def _dev(self, device):
    # torch's new_* create on self's device unless told otherwise (None: the CPU fast path)
    return device if device is not None or type(self._data) is np.ndarray else self.device


Tensor.new_tensor = lambda self, data, *, dtype=None, device=None, requires_grad=False: tensor(
    data, dtype=dtype or self.dtype, device=_dev(self, device), requires_grad=requires_grad)
Tensor.new_zeros = lambda self, *size, dtype=None, device=None, requires_grad=False: zeros(
    *size, dtype=dtype or self.dtype, device=_dev(self, device), requires_grad=requires_grad)
Tensor.new_ones = lambda self, *size, dtype=None, device=None, requires_grad=False: ones(
    *size, dtype=dtype or self.dtype, device=_dev(self, device), requires_grad=requires_grad)
Tensor.new_empty = lambda self, *size, dtype=None, device=None, requires_grad=False: empty(
    *size, dtype=dtype or self.dtype, device=_dev(self, device), requires_grad=requires_grad)
Tensor.new_full = lambda self, size, fill_value, *, dtype=None, device=None, \
    requires_grad=False: full(size, fill_value, dtype=dtype or self.dtype,
                              device=_dev(self, device), requires_grad=requires_grad)


def _fill_(self, value):
    from .conversion import COPY
    from .._core.dispatch import apply_inplace
    if isinstance(value, Tensor) and value.dim() != 0:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                           f"{value.dim()} dimensions.")
    check_scalar_fits(value, self.dtype.np)
    # torch fills through a number without its overlap checks; with a 0-dim tensor value it
    # refuses an expanded target, but reads the value first (a view of self is fine)
    return apply_inplace(COPY, self, (value,), {},
                         overlap="target" if isinstance(value, Tensor) else False)


def _zero_(self):
    return _fill_(self, 0)


Tensor.fill_ = _fill_
Tensor.zero_ = _zero_
