"""Factories in the creation primitives ``full``, ``arange`` and ``tensor``."""
import math

import numpy as np

from . import decomposes
from ._util import cast, full, iota, np_dtype, prim, reshape


@decomposes("empty")
def _empty(*, shape, dtype, device=None):
    return full(shape, 0, dtype)  # any value is allowed: zeros are cheapest to lower


@decomposes("empty_strided")
def _empty_strided(*, size, stride, dtype, device=None):
    return full(size, 0, dtype)


@decomposes("eye")
def _eye(*, n, m, dtype, device=None):
    m = n if m is None else m
    return cast(prim.eq(reshape(iota(n), (n, 1)), reshape(iota(m), (1, m))), dtype)


def _count(start, end, step, inclusive):
    if inclusive:
        return int(math.floor((end - start) / step)) + 1
    return max(int(math.ceil((end - start) / step)), 0)


@decomposes("range")
def _range(*, start, end, step, dtype, device=None):
    n = _count(start, end, step, True)
    return cast(prim.add(prim.mul(iota(n, np.float64), step), start), dtype)


def _linspace64(start, end, steps, dt=None):
    """In float64; ``dt``: the float dtype whose rounding the bounds and step take first."""
    if steps == 1:
        return full((1,), start, np.float64)
    i = iota(steps, np.float64)
    if dt is None:
        delta = (end - start) / (steps - 1)
    else:
        start, end = float(dt.type(start)), float(dt.type(end))
        delta = float((dt.type(end) - dt.type(start)) / dt.type(steps - 1))
    # torch's rule: the first half counts up from start, the second down from end (the
    # kernel computes in the output dtype with fused multiply-adds; ints as here)
    up = prim.add(prim.mul(i, delta), start)
    down = prim.sub(float(end), prim.mul(prim.sub(float(steps - 1), i), delta))
    return prim.where(prim.lt(i, float(steps // 2)), up, down)


@decomposes("linspace")
def _linspace(*, start, end, steps, dtype, device=None):
    dt = np_dtype(dtype)
    if dt.kind == "c" or isinstance(start, complex) or isinstance(end, complex):
        re = _linspace64(complex(start).real, complex(end).real, steps)
        im = _linspace64(complex(start).imag, complex(end).imag, steps)
        return cast(prim.complex(re, im), dt)
    if dt.kind in "iu":  # the bounds as the output dtype holds them, as torch's kernel
        start, end = float(math.trunc(start)), float(math.trunc(end))
    y = _linspace64(start, end, steps, dt if dt.kind == "f" else None) if steps else \
        full((0,), 0, np.float64)
    if dt.kind in "iu":
        y = prim.trunc(y)
    return cast(y, dt)


@decomposes("logspace")
def _logspace(*, start, end, steps, base, dtype, device=None):
    y = _linspace64(start, end, steps) if steps else full((0,), 0, np.float64)
    return cast(prim.pow(float(base), y), dtype)
