"""Random operators as transforms of the counter RNG primitive ``_rng_uniform``.

Each draws its ``(seed, offset)`` from the eager Generator (`primitives.rng_key`), so a
decomposed program is reproducible under ``manual_seed``; the numbers differ from the
eager kernels' (those draw from the Generator's PCG64 stream).  Samplers whose number of
draws depends on the values (Poisson, Gamma, Binomial: rejection loops) have no
decomposition.
"""
import math

import numpy as np

from ..._core import dtype as _dt
from ..primitives import rng_key
from . import decomposes, no_decomposition
from ._util import cast, full, np_dtype, numel, prim, reshape

_MANTISSA = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}


def _uniform01(shape, dt, generator=None):
    """U[0, 1) of ``shape``: float64 draws for float64 and integers, float32 otherwise."""
    d = np_dtype(dt)
    work = np.dtype(np.float64) if d == np.float64 or d.kind in "iub" else np.dtype(np.float32)
    seed, offset = rng_key(generator)
    return prim._rng_uniform(seed, offset, shape=tuple(shape), dtype=work)


def _target(x, shape, dtype):
    return (tuple(x.shape), x.dtype.np) if x is not None else (tuple(shape), np_dtype(dtype))


def _finish(r, dt):
    return cast(r, dt)


def _std_normal(shape, dt, generator=None):
    """Box-Muller on one draw of 2 * n counters."""
    d = np_dtype(dt)
    if d.kind == "c":
        rdt = np.dtype(np.float32) if d == np.complex64 else np.dtype(np.float64)
        z = _std_normal(tuple(shape) + (2,), rdt, generator)
        z = prim.mul(z, math.sqrt(0.5))
        return prim.view_as_complex(prim._to_copy(z, dtype=rdt))
    u = _uniform01((2,) + tuple(shape), d, generator)
    u1 = prim.select(u, key=(0,))
    u2 = prim.select(u, key=(1,))
    radius = prim.sqrt(prim.mul(prim.log1p(prim.neg(u1)), -2.0))
    return prim.mul(radius, prim.cos(prim.mul(u2, 2 * math.pi)))


@decomposes("uniform")
def _uniform(x=None, *, low=0.0, high=1.0, generator=None, shape=None, dtype=None):
    shape, dt = _target(x, shape, dtype)
    r = _uniform01(shape, dt, generator)
    if low != 0.0 or high != 1.0:
        r = prim.add(prim.mul(r, high - low), low)
    return _finish(r, dt)


@decomposes("normal")
def _normal(x=None, *, mean=0.0, std=1.0, generator=None, shape=None, dtype=None):
    shape, dt = _target(x, shape, dtype)
    r = _std_normal(shape, dt, generator)
    if mean != 0.0 or std != 1.0:
        r = prim.add(prim.mul(r, std), mean)
    return _finish(r, dt)


@decomposes("normal_tensor")
def _normal_tensor(mean, std, generator=None):
    metas = [v for v in (mean, std) if hasattr(v, "shape")]
    shape = tuple(np.broadcast_shapes(*[tuple(m.shape) for m in metas]))
    dt = mean.dtype if hasattr(mean, "shape") else std.dtype
    z = _std_normal(shape, dt, generator)
    return _finish(prim.add(prim.mul(z, std), mean), dt)


@decomposes("log_normal")
def _log_normal(x=None, *, mean=1.0, std=2.0, generator=None, shape=None, dtype=None):
    shape, dt = _target(x, shape, dtype)
    z = _std_normal(shape, dt, generator)
    return _finish(prim.exp(prim.add(prim.mul(z, std), mean)), dt)


@decomposes("exponential")
def _exponential(x=None, *, lambd=1.0, generator=None, shape=None, dtype=None):
    shape, dt = _target(x, shape, dtype)
    u = _uniform01(shape, dt, generator)
    return _finish(prim.div(prim.neg(prim.log1p(prim.neg(u))), lambd), dt)


@decomposes("cauchy")
def _cauchy(x=None, *, median=0.0, sigma=1.0, generator=None, shape=None, dtype=None):
    shape, dt = _target(x, shape, dtype)
    u = _uniform01(shape, np.float64, generator)
    r = prim.tan(prim.mul(prim.sub(u, 0.5), math.pi))
    return _finish(prim.add(prim.mul(r, sigma), median), dt)


@decomposes("geometric")
def _geometric(x=None, *, p, generator=None, shape=None, dtype=None):
    shape, dt = _target(x, shape, dtype)
    u = _uniform01(shape, np.float64, generator)
    k = prim.ceil(prim.div(prim.log1p(prim.neg(u)), math.log1p(-p)))
    return _finish(prim.maximum(k, 1.0), dt)


@decomposes("bernoulli_scalar")
def _bernoulli_scalar(x=None, *, p=0.5, generator=None, shape=None, dtype=None):
    shape, dt = _target(x, shape, dtype)
    u = _uniform01(shape, np.float32 if p not in (0, 1) else np.float64, generator)
    return _finish(prim.lt(u, p), dt)


@decomposes("bernoulli")
def _bernoulli(x, p=None, generator=None):
    probs = x if p is None else p
    u = _uniform01(tuple(x.shape), np.float64, generator)
    return _finish(prim.lt(u, probs), x.dtype)


@decomposes("random")
def _random(x=None, *, low=0, high=None, generator=None, shape=None, dtype=None):
    shape, dt = _target(x, shape, dtype)
    if high is None:
        if dt.kind == "b":
            high = 2
        elif dt.kind in "iu":
            high = int(np.iinfo(dt).max) + 1
        else:
            high = 2 ** _MANTISSA[_dt.FROM_NP[dt].name] + 1
    u = _uniform01(shape, np.float64, generator)
    k = prim.floor(prim.mul(u, float(high - low)))
    return _finish(prim.add(cast(k, np.int64), low), dt)


@decomposes("randperm")
def _randperm(n, dtype, generator):
    u = _uniform01((n,), np.float64, generator)
    return cast(prim.sort(u, dim=0, descending=False)[1], dtype)


@decomposes("multinomial")
def _multinomial(probs, num_samples, replacement=False, generator=None):
    n_cat = probs.shape[-1]
    p = cast(reshape(probs, (numel(probs.shape[:-1]), n_cat)), np.float64)
    rows = p.shape[0]
    if replacement:
        cdf = prim.cumsum(p, dim=1)
        total = prim.select(prim.permute(cdf, dims=(1, 0)), key=(n_cat - 1,))
        u = _uniform01((rows, num_samples), np.float64, generator)
        target = prim.mul(u, reshape(total, (rows, 1)))
        idx = prim.searchsorted(cdf, target, None, side="right", out_int32=False)
        # rounding at the top of a row must not pick a trailing zero-probability category
        positive = cast(prim.gt(prim.flip(p, dims=(1,)), 0), np.uint8)
        last = prim.sub(n_cat - 1, prim.argmax(positive, dim=1, keepdim=True))
        idx = prim.minimum(idx, last)
    else:
        # exponential race: the first arrivals of rates p; zero-probability categories last
        u = _uniform01((rows, n_cat), np.float64, generator)
        keys = prim.div(prim.neg(prim.log1p(prim.neg(u))), prim.where(prim.gt(p, 0), p, 1))
        keys = prim.where(prim.eq(p, 0), math.inf, keys)
        idx = prim.topk(keys, k=num_samples, dim=1, largest=False)[1]
    return reshape(idx, tuple(probs.shape[:-1]) + (num_samples,))


def _keep(shape, p, dt, generator=None):
    d = np_dtype(dt)
    return prim.ge(_uniform01(shape, d if d in (np.float32, np.float64) else np.float32,
                              generator), p)


@decomposes("native_dropout")
def _native_dropout(x, p):
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    mask = prim.mul(cast(_keep(tuple(x.shape), p, x.dtype), x.dtype), scale)
    mask = cast(mask, x.dtype)
    return prim.mul(x, mask), mask


@decomposes("_dropout_mask")
def _dropout_mask(x, p, shape):
    return cast(_keep(tuple(shape), p, x.dtype), x.dtype)


@decomposes("rrelu_with_noise")
def _rrelu(x, lower, upper, generator=None):
    u = _uniform01(tuple(x.shape), x.dtype, generator)
    a = cast(prim.add(prim.mul(u, upper - lower), lower), x.dtype)
    a = prim.where(prim.ge(x, 0), full((), 1, x.dtype), a)
    return prim.mul(x, a), a


for _name, _why in (
        ("poisson", "rejection sampling: the number of uniform draws per element depends on "
                    "the rate and on earlier draws, which a static counter program cannot size"),
        ("standard_gamma", "rejection sampling (Marsaglia-Tsang): the number of draws per "
                           "element depends on the values drawn"),
        ("distributions_binomial", "rejection sampling (BTRS): the number of draws per element "
                                   "depends on the values drawn")):
    no_decomposition(_name, _why)
