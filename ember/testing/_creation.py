"""`make_tensor`: random test tensors of any shape and dtype (torch.testing.make_tensor)."""
import math
import warnings

from .._core import dtype as _dt
from ..ops.creation import empty, full
from ..ops.random import randint


def _shape(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(shape)


def _bounds(dtype, low, high, lo_default, hi_default, lowest, highest_excl):
    """torch's checks and clamping of the requested [low, high) interval."""
    low = lo_default if low is None else low
    high = hi_default if high is None else high
    if (isinstance(low, float) and math.isnan(low)) or (isinstance(high, float) and
                                                        math.isnan(high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    floating = dtype.is_floating_point or dtype.is_complex
    if low == high and floating:
        warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or "
                      "complex types is deprecated since 2.1 and will be removed in 2.3. "
                      "Use `torch.full(...)` instead.", FutureWarning, stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest_excl:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                         f"but {dtype} only supports [{lowest}, {highest_excl})")
    low = min(max(low, lowest), highest_excl)
    high = min(max(high, lowest), highest_excl)
    if not floating:
        return math.ceil(low), math.ceil(high)
    return low, high


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None):
    """Creates a tensor with the given ``shape``, ``device`` and ``dtype``, filled with values
    uniformly drawn from ``[low, high)`` (defaults depend on the dtype)."""
    shape = _shape(shape)
    if requires_grad and not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got dtype={dtype}")
    target = shape[:-1] + (shape[-1] * 2,) if noncontiguous and shape and \
        math.prod(shape) > 1 else shape
    if dtype == _dt.bool:
        low, high = _bounds(dtype, low, high, 0, 2, 0, 2)
        t = randint(low, high, target, dtype=_dt.int64).to(_dt.bool)
    elif not (dtype.is_floating_point or dtype.is_complex):
        info = _dt.iinfo(dtype)
        # randint cannot draw int64's maximum: its bound stays exclusive there
        low, high = _bounds(dtype, low, high, -9, 10, info.min,
                            info.max + (dtype != _dt.int64))
        t = randint(low, high, target, dtype=dtype)
    else:
        info = _dt.finfo(dtype.to_real() if dtype.is_complex else dtype)
        low, high = _bounds(dtype, low, high, -9, 9, info.min, info.max)
        if low == high:
            t = full(target, low, dtype=dtype)
        elif dtype.is_complex:
            t = _complex_uniform(target, dtype, low, high)
        else:
            t = empty(target, dtype=dtype).uniform_(low, high)
    if exclude_zero:
        if dtype.is_floating_point or dtype.is_complex:
            eps = _dt.finfo(dtype.to_real() if dtype.is_complex else dtype).tiny
        else:
            eps = 1
        t = t.masked_fill(t == 0, eps)
    if target != shape:
        t = t[..., ::2]
    if device is not None and str(device) != "cpu":
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _complex_uniform(shape, dtype, low, high):
    real = dtype.to_real()
    re = empty(shape, dtype=real).uniform_(low, high)
    im = empty(shape, dtype=real).uniform_(low, high)
    from ..ops.complex_ops import complex as _complex
    return _complex(re, im)


