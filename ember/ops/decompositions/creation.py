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


def _linspace64(start, end, steps):
    if steps == 1:
        return full((1,), start, np.float64)
    i = iota(steps, np.float64)
    delta = (end - start) / (steps - 1)
    y = prim.add(prim.mul(i, delta), start)
    # the last point is end itself, not start + (steps - 1) * delta rounded
    return prim.where(prim.eq(i, steps - 1), float(end), y)


@decomposes("linspace")
def _linspace(*, start, end, steps, dtype, device=None):
    dt = np_dtype(dtype)
    if dt.kind == "c" or isinstance(start, complex) or isinstance(end, complex):
        re = _linspace64(complex(start).real, complex(end).real, steps)
        im = _linspace64(complex(start).imag, complex(end).imag, steps)
        return cast(prim.complex(re, im), dt)
    y = _linspace64(start, end, steps) if steps else full((0,), 0, np.float64)
    if dt.kind in "iu":
        y = prim.trunc(y)
    return cast(y, dt)


@decomposes("logspace")
def _logspace(*, start, end, steps, base, dtype, device=None):
    y = _linspace64(start, end, steps) if steps else full((0,), 0, np.float64)
    return cast(prim.pow(float(base), y), dtype)
