"""Random sampling: rand/randn/randint/randperm/normal/bernoulli/multinomial/poisson, the
``*_like`` forms and the in-place samplers (``uniform_``, ``normal_``, ``random_``, ...).

Each sampler is one Op whose kernel draws from the ``generator`` param (a
`ember.Generator`, the default one when none is given), so modes and tracing see
random calls like any other operator.  The same Op serves the creation function
(``shape``/``dtype`` params, no input) and the in-place method (input 0 gives the
shape and dtype).  float32 is drawn as float32 directly (no float64 detour).
Sampling ops are not differentiable in torch: their derivatives are zeros.
"""
import numpy as np

from .._core.dispatch import apply_meta, overridable
from .._core import dtype as _dt
from .._core import meta as _meta
from .._core import random as _rnd
from .._core.random import (Generator, default_generator, fork_rng, get_rng_state,
                            initial_seed, manual_seed, seed, set_rng_state)
from .._core.tensor import Tensor
from ._helpers import (NeedsOverride, Op, apply, apply_inplace, handle_override, type_name,
                       write_out)
from .blas import cpp_name, short_name
from .._core.device import DEFAULT_DEVICE
from .._core.meta_device import is_meta_device
from .creation import _finish, _size, _size_kw
from . import random_streams as _rs

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state", "rand", "randn", "randint", "randperm", "normal",
           "bernoulli", "multinomial", "poisson", "rand_like", "randn_like", "randint_like"]
_ = fork_rng  # ember.random.fork_rng

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_NATIVE = (_F32, _F64)
_MANTISSA = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}


def _gen(generator):
    if generator is None:
        return _rnd.default_generator._gen
    if not isinstance(generator, Generator):
        raise TypeError(f"expected a ember.Generator as generator, got "
                        f"{type(generator).__name__}")
    return generator._gen


def _g(generator):
    """The `Generator` itself (torch's mt19937 stream: the torch-exact samplers use it)."""
    return _rnd.default_generator if generator is None else generator


def _real_float(dt):
    return dt.kind == "f" or dt == _dt.bfloat16.np


def _not_impl(kernel, dt):
    return NotImplementedError(f"\"{kernel}\" not implemented for '{short_name(dt)}'")


def _real_of(dt):
    return np.dtype(np.float32) if dt == np.complex64 else np.dtype(np.float64)


def _draw(fn, g, shape, dt, scale=1.0):
    """``fn(g, shape, dtype)`` in dtype ``dt``: native floats directly, halves via float32,
    complex as independent real and imaginary parts (each scaled by ``scale``)."""
    if dt in _NATIVE:
        return fn(g, shape, dt)
    if dt.kind == "c":
        rdt = _real_of(dt)
        r = fn(g, tuple(shape) + (2,), rdt)
        if scale != 1.0:
            r *= scale
        return r.view(dt)[..., 0]
    return fn(g, shape, _F32).astype(dt)


def _uniform01(g, shape, dt):
    return g.random(shape, dtype=dt)


def _stdnormal(g, shape, dt):
    return g.standard_normal(shape, dtype=dt)


def _float_only(dt, kernel):
    if dt.kind not in "fc" and dt not in (_dt.bfloat16.np,):
        raise _not_impl(kernel, dt)


def _target(x, shape, dtype):
    return (x.shape, x.dtype) if x is not None else (shape, dtype)


# ---- samplers (x: the in-place target, or None for creation with shape/dtype) ------------
def _uniform_kernel(xp, x=None, *, low=0.0, high=1.0, generator=None, shape=None, dtype=None):
    shape, dt = _target(x, shape, dtype)
    _float_only(dt, "check_uniform_bounds")
    if low > high:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={low} > to={high}")
    if _real_float(dt):
        return _rs.uniform(_g(generator), int(np.prod(shape)), dt, low, high).reshape(shape)
    r = _draw(_uniform01, _gen(generator), shape, dt)
    if low != 0.0 or high != 1.0:
        r = r * (high - low) + low
        if r.dtype != dt:
            r = r.astype(dt)
    return r


def _normal_kernel(xp, x=None, *, mean=0.0, std=1.0, generator=None, shape=None, dtype=None):
    shape, dt = _target(x, shape, dtype)
    _float_only(dt, "normal_kernel_cpu")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    if _real_float(dt):
        contiguous = x is None or x.flags.c_contiguous
        return _rs.normal(_g(generator), int(np.prod(shape)), dt, mean, std,
                          contiguous).reshape(shape)
    r = _draw(_stdnormal, _gen(generator), shape, dt, scale=np.sqrt(0.5))
    if mean != 0.0 or std != 1.0:
        r = r * std + mean
        if r.dtype != dt:
            r = r.astype(dt)
    return r


def _int_bounds(dt, low, high):
    """Check [low, high) against ``dt``'s range with torch's messages."""
    if dt.kind == "b":
        lo, hi = 0, 1
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = int(info.min), int(info.max)
    else:
        lo, hi = -(2 ** _MANTISSA[_dt.FROM_NP[dt].name]), 2 ** _MANTISSA[_dt.FROM_NP[dt].name]
    name = cpp_name(dt)
    if not lo <= low <= hi:
        raise RuntimeError(f"from is out of bounds for {name}")
    if not lo <= high - 1 <= hi:
        raise RuntimeError(f"to - 1 is out of bounds for {name}")


def _random_kernel(xp, x=None, *, low=0, high=None, generator=None, shape=None, dtype=None):
    shape, dt = _target(x, shape, dtype)
    if dt.kind == "c":
        raise _not_impl("random_from_to", dt)
    default = high is None and low == 0
    if high is None:
        if dt.kind == "b":
            high = 2
        elif dt.kind in "iu":
            high = int(np.iinfo(dt).max) + 1
        else:
            high = 2 ** _MANTISSA[_dt.FROM_NP[dt].name] + 1
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    _int_bounds(dt, low, high)
    n = int(np.prod(shape))
    if high - low <= 1 << 63 and dt.kind != "c":
        if default:
            return _rs.random_default(_g(generator), n, dt).reshape(shape)
        return _rs.random_from_to(_g(generator), n, low, high, dt).reshape(shape)
    g = _gen(generator)
    if high - 1 > np.iinfo(np.int64).max:
        r = g.integers(low, high, shape, dtype=np.uint64)
    else:
        r = g.integers(low, high, shape, dtype=np.int64)
    return r.astype(dt)


def _continuous(dt, name):
    if dt.kind not in "fc" and dt != _dt.bfloat16.np:
        raise RuntimeError(f"{name} distribution is a continuous probability distribution. dtype "
                           f"must be a floating point but you specified {cpp_name(dt)}")


def _exponential_kernel(xp, x=None, *, lambd=1.0, generator=None, shape=None, dtype=None):
    shape, dt = _target(x, shape, dtype)
    _continuous(dt, "Exponential")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    if _real_float(dt):
        return _rs.exponential(_g(generator), int(np.prod(shape)), lambd).astype(dt).reshape(
            shape)
    r = _draw(lambda g, s, d: g.standard_exponential(s, dtype=d), _gen(generator), shape, dt)
    return (r / lambd).astype(dt, copy=False) if lambd != 1.0 else r


def _geometric_kernel(xp, x=None, *, p, generator=None, shape=None, dtype=None):
    shape, dt = _target(x, shape, dtype)
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    if dt.kind != "c":
        return _rs.geometric(_g(generator), int(np.prod(shape)), p).astype(dt).reshape(shape)
    return _gen(generator).geometric(p, shape).astype(dt)


def _log_normal_kernel(xp, x=None, *, mean=1.0, std=2.0, generator=None, shape=None,
                       dtype=None):
    shape, dt = _target(x, shape, dtype)
    _float_only(dt, "log_normal_cpu")
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    if _real_float(dt):
        return _rs.log_normal(_g(generator), int(np.prod(shape)), mean, std).astype(
            dt).reshape(shape)
    r = _draw(_stdnormal, _gen(generator), shape, dt)
    return np.exp(r * std + mean).astype(dt, copy=False)


def _cauchy_kernel(xp, x=None, *, median=0.0, sigma=1.0, generator=None, shape=None,
                   dtype=None):
    shape, dt = _target(x, shape, dtype)
    _continuous(dt, "Cauchy")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    if _real_float(dt):
        return _rs.cauchy(_g(generator), int(np.prod(shape)), median, sigma).astype(
            dt).reshape(shape)
    r = _gen(generator).standard_cauchy(shape)
    return (r * sigma + median).astype(dt)


def _bernoulli_scalar_kernel(xp, x=None, *, p=0.5, generator=None, shape=None, dtype=None):
    shape, dt = _target(x, shape, dtype)
    if np.dtype(dt).kind == "c":  # torch's CPU kernel has no complex instance
        raise NotImplementedError(
            f"\"bernoulli_scalar_cpu_\" not implemented for '{type_name(np.dtype(dt))}'")
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    return _rs.bernoulli_scalar(_g(generator), int(np.prod(shape)), p).astype(dt).reshape(shape)


def _zero_vjp(ctx, g, *inputs, **params):
    return tuple(g * 0 if need else None for need in ctx.needs_input_grad)


def _sampler_shape(x=None, *, shape=None, dtype=None, **params):
    return (x.shape, x.dtype) if x is not None else (tuple(shape), _meta.as_dtype(dtype))


def _sampler(name, kernel):
    return Op(name, kernel, _zero_vjp, save_inputs=False, category="random", shape=_sampler_shape)


UNIFORM = _sampler("uniform", _uniform_kernel)
NORMAL = _sampler("normal", _normal_kernel)
RANDOM = _sampler("random", _random_kernel)
EXPONENTIAL = _sampler("exponential", _exponential_kernel)
GEOMETRIC = _sampler("geometric", _geometric_kernel)
LOG_NORMAL = _sampler("log_normal", _log_normal_kernel)
CAUCHY = _sampler("cauchy", _cauchy_kernel)
BERNOULLI_SCALAR = _sampler("bernoulli_scalar", _bernoulli_scalar_kernel)


# ---- samplers with tensor parameters ------------------------------------------------------
def _normal_tensor_kernel(xp, mean, std, generator=None):
    # the output has mean's dtype (std's for a scalar mean); std may be of any real dtype
    dt = mean.dtype if isinstance(mean, np.ndarray) else std.dtype
    if isinstance(std, np.ndarray) and std.dtype.kind == "c":
        raise RuntimeError("normal expects standard deviation to be non-complex")
    if dt.kind not in "fcV":
        raise _not_impl("normal_kernel_cpu", dt)
    if isinstance(std, np.ndarray) and std.size and not (std >= 0).all():
        raise RuntimeError("normal expects all elements of std >= 0.0")
    if not isinstance(std, np.ndarray) and std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    shape = np.broadcast_shapes(np.shape(mean), np.shape(std))
    if _real_float(dt):
        # torch: a standard normal_ of the output, then mul_(std) and add_(mean)
        z = _rs.normal(_g(generator), int(np.prod(shape)), dt, 0.0, 1.0).reshape(shape)
        return ((z * xp.asarray(std).astype(dt)).astype(dt) + xp.asarray(mean).astype(dt)
                ).astype(dt, copy=False)
    z = _draw(_stdnormal, _gen(generator), shape, dt, scale=np.sqrt(0.5))
    return (z * std + mean).astype(dt, copy=False)


def _bernoulli_tensor_kernel(xp, x, p=None, generator=None):
    """``bernoulli(probs)`` (x is the probabilities) or ``x.bernoulli_(p_tensor)``."""
    probs = x if p is None else p
    if probs.dtype.kind not in "fc" and probs.dtype != _dt.bfloat16.np:
        raise _not_impl("bernoulli_tensor_cpu_p_", probs.dtype)
    if probs.size and not ((probs >= 0) & (probs <= 1)).all():
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    probs = np.ascontiguousarray(np.broadcast_to(probs, x.shape))
    return _rs.bernoulli_tensor(_g(generator), probs).astype(x.dtype)


def _poisson_kernel(xp, rates, generator=None):
    if rates.dtype.kind != "f" and rates.dtype != _dt.bfloat16.np:
        raise _not_impl("poisson_cpu", rates.dtype)
    r = rates.astype(_F64)
    if r.size and not (r >= 0).all():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    return _gen(generator).poisson(r).astype(rates.dtype)


def _multinomial_kernel(xp, probs, num_samples, replacement=False, generator=None):
    if probs.dtype.kind != "f" and probs.dtype != _dt.bfloat16.np:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{short_name(probs.dtype)}")
    if probs.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    n_cat = probs.shape[-1]
    if not replacement and num_samples > n_cat:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    p = probs.reshape(-1, n_cat).astype(_F64)
    if not (np.isfinite(p) & (p >= 0)).all():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    total = p.sum(1)
    if (total <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    rows = p.shape[0]
    g = _g(generator)
    w = probs.reshape(rows, n_cat)
    if replacement and num_samples > 1:
        # torch: a sequential running sum in the input's precision (float for halves),
        # normalised by its last value and topped with 1, then per row and per sample a
        # double uniform located by binary search (the first bucket >= u)
        acc = _F64 if w.dtype == _F64 else _F32
        cdf = np.cumsum(w.astype(acc), axis=1)
        cdf /= cdf[:, -1:]
        cdf[:, -1] = 1
        u = _rs.unit_f64(g, rows * num_samples).reshape(rows, num_samples)
        idx = np.stack([np.searchsorted(cdf[r].astype(_F64), u[r], side="left")
                        for r in range(rows)])
    else:
        # torch: argmax / topk of p / q with q ~ Exp(1) drawn in the input's dtype (the
        # exponential race), so zero-probability categories come last, never an error (the
        # order among several of them follows NumPy's sort, not torch's topk)
        q = _rs.exponential(g, w.size, 1.0).astype(w.dtype).reshape(w.shape)
        keys = (w.astype(_F32) / q.astype(_F32)).astype(w.dtype) if w.dtype.itemsize < 4 \
            else w / q
        if num_samples == 1:
            idx = np.argmax(keys, axis=1)[:, None]
        else:
            idx = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
    return idx.reshape(probs.shape[:-1] + (num_samples,)).astype(np.int64)


def _normal_tensor_shape(mean, std, generator=None):
    metas = [v for v in (mean, std) if isinstance(v, _meta.TensorMeta)]
    return _meta.broadcast_shapes(*[m.shape for m in metas]), metas[0].dtype


NORMAL_TENSOR = Op("normal_tensor", _normal_tensor_kernel, _zero_vjp, save_inputs=False,
                   category="random", shape=_normal_tensor_shape)
BERNOULLI = Op("bernoulli", _bernoulli_tensor_kernel, _zero_vjp, save_inputs=False,
               category="random", shape=_meta.same)
POISSON = Op("poisson", _poisson_kernel, _zero_vjp, save_inputs=False, category="random",
             shape=_meta.same)
MULTINOMIAL = Op("multinomial", _multinomial_kernel, None, differentiable=False,
                 category="random", shape=lambda probs, num_samples, replacement=False,
                 generator=None: (probs.shape[:-1] + (num_samples,), _dt.int64))


# ---- public API ---------------------------------------------------------------------------
def _gen_param(generator):
    if generator is not None and not isinstance(generator, Generator):
        raise TypeError(f"expected a ember.Generator as generator, got "
                        f"{type(generator).__name__}")
    return generator or _rnd.default_generator


def _create(op, size, params, generator, out, dtype, device, requires_grad, default=None):
    shape = _size(size)
    if dtype is None:
        dtype = out.dtype if out is not None else (default or _dt.get_default_dtype())
    params = dict(params, shape=shape, dtype=dtype.np, generator=_gen_param(generator))
    if (device is not None or DEFAULT_DEVICE[0] is not None) and out is None and \
            is_meta_device(device or DEFAULT_DEVICE[0]):
        r = apply_meta(op, (), params)  # no values drawn: the generator does not advance
        return r._set_requires_grad(True) if requires_grad else r
    r = apply(op, (), params)
    if out is not None:
        return write_out(out, r)
    if device is not None or requires_grad or DEFAULT_DEVICE[0] is not None:
        return _finish(r._data, device, requires_grad)
    return r


@overridable
def rand(*size, generator=None, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False, **kw):
    """Samples from the uniform distribution on [0, 1)."""
    return _create(UNIFORM, _size_kw(size, kw, "rand"), {}, generator, out, dtype, device,
                   requires_grad)


@overridable
def randn(*size, generator=None, out=None, dtype=None, layout=None, device=None,
          requires_grad=False, pin_memory=False, **kw):
    """Samples from the standard normal distribution (complex: variance 1/2 per part)."""
    return _create(NORMAL, _size_kw(size, kw, "randn"), {}, generator, out, dtype, device,
                   requires_grad)


def _randint_args(args, size):
    if size is None:
        if not args:
            raise TypeError("randint() missing required argument 'size'")
        args, size = args[:-1], args[-1]
    if len(args) == 1:
        return 0, int(args[0]), size
    if len(args) == 2:
        return int(args[0]), int(args[1]), size
    raise TypeError("randint() received an invalid combination of arguments")


@overridable
def randint(*args, size=None, generator=None, out=None, dtype=None, layout=None, device=None,
            requires_grad=False, pin_memory=False, low=None, high=None):
    """Integers drawn uniformly from [low, high): ``randint(high, size)`` or
    ``randint(low, high, size)`` (int64 unless ``dtype`` says otherwise)."""
    if high is not None:
        args = (low or 0, high) + args
    low, high, size = _randint_args(args, size)
    return _create(RANDOM, (size,), {"low": low, "high": high}, generator, out, dtype, device,
                   requires_grad, default=_dt.int64)


@overridable
def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None,
             requires_grad=False, pin_memory=False):
    """A random permutation of 0 .. n-1."""
    _size((n,))
    dt = dtype or (out.dtype if out is not None else _dt.int64)
    r = apply(RANDPERM, (), {"n": int(n), "dtype": dt.np, "generator": _gen_param(generator)})
    if out is not None:
        return write_out(out, r)
    return _finish(r._data, device, requires_grad) \
        if device or requires_grad or DEFAULT_DEVICE[0] is not None else r


RANDPERM = Op("randperm", lambda xp, n, dtype, generator: _rs.randperm(_g(generator), n).astype(
    dtype), None, differentiable=False, category="random",
    shape=lambda n, dtype, generator: ((n,), _meta.as_dtype(dtype)))


@overridable
def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None,
           device=None, requires_grad=False):
    """Normal samples: tensor ``mean``/``std`` (elementwise, broadcast), or float mean and std
    with ``size``."""
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        try:
            r = apply(NORMAL_TENSOR, (mean, std), {"generator": _gen_param(generator)})
        except NeedsOverride:
            return handle_override(normal, (mean, std), {"generator": generator})
        return r if out is None else write_out(out, r)
    if size is None:
        raise TypeError("normal() received an invalid combination of arguments - expected a "
                        "Tensor mean or std, or a size")
    return _create(NORMAL, (size,), {"mean": float(mean), "std": float(std)}, generator, out,
                   dtype, device, requires_grad)


@overridable
def bernoulli(input, p=None, *, generator=None, out=None):
    """0/1 samples with probabilities ``input`` (or ``p`` for every element)."""
    g = _gen_param(generator)
    if p is None:
        r = apply(BERNOULLI, (input,), {"generator": g})
    else:
        r = apply(BERNOULLI_SCALAR, (input,), {"p": float(p), "generator": g})
    return r if out is None else write_out(out, r)


@overridable
def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """Indices sampled from the rows of ``input`` (unnormalised probabilities)."""
    r = apply(MULTINOMIAL, (input,), {"num_samples": int(num_samples),
                                      "replacement": bool(replacement),
                                      "generator": _gen_param(generator)})
    return r if out is None else write_out(out, r)


@overridable
def poisson(input, generator=None):
    """Poisson samples with rates ``input``."""
    return apply(POISSON, (input,), {"generator": _gen_param(generator)})


def _like(op, input, params, dtype, device, requires_grad, generator):
    dev = device if device is not None else (None if input.device.type == "cpu" else
                                             input.device)
    return _create(op, (tuple(input.shape),), params, generator, None, dtype or input.dtype, dev,
                   requires_grad)


@overridable
def rand_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None, generator=None):
    """``rand`` with ``input``'s shape (and dtype/device unless given)."""
    return _like(UNIFORM, input, {}, dtype, device, requires_grad, generator)


@overridable
def randn_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None, generator=None):
    """``randn`` with ``input``'s shape (and dtype/device unless given)."""
    return _like(NORMAL, input, {}, dtype, device, requires_grad, generator)


@overridable
def randint_like(input, low=0, high=None, *, dtype=None, layout=None, device=None,
                 requires_grad=False, memory_format=None, generator=None):
    """``randint`` with ``input``'s shape: ``randint_like(x, high)`` or ``(x, low, high)``."""
    if high is None:
        low, high = 0, low
    return _like(RANDOM, input, {"low": int(low), "high": int(high)}, dtype, device,
                 requires_grad, generator)


# ---- Tensor methods -------------------------------------------------------------------------
def _inplace(op, self, generator, **params):
    params["generator"] = _gen_param(generator)
    return apply_inplace(op, self, (), params)


def _uniform_(self, from_=0.0, to=1.0, *, generator=None, **kw):
    return _inplace(UNIFORM, self, generator, low=float(kw.get("from", from_)), high=float(to))


def _random_(self, from_=None, to=None, *, generator=None, **kw):
    from_ = kw.get("from", from_)
    if to is None and from_ is not None:
        from_, to = 0, from_
    return _inplace(RANDOM, self, generator, low=int(from_ or 0),
                    high=None if to is None else int(to))


def _bernoulli_(self, p=0.5, *, generator=None):
    if isinstance(p, Tensor):
        return apply_inplace(BERNOULLI, self, (p,), {"generator": _gen_param(generator)})
    return _inplace(BERNOULLI_SCALAR, self, generator, p=float(p))


def _bernoulli_method(self, p=None, *, generator=None):
    return bernoulli(self, p, generator=generator)


Tensor.uniform_ = _uniform_
Tensor.normal_ = lambda self, mean=0.0, std=1.0, *, generator=None: _inplace(
    NORMAL, self, generator, mean=float(mean), std=float(std))
Tensor.random_ = _random_
Tensor.exponential_ = lambda self, lambd=1.0, *, generator=None: _inplace(
    EXPONENTIAL, self, generator, lambd=float(lambd))
Tensor.geometric_ = lambda self, p, *, generator=None: _inplace(GEOMETRIC, self, generator,
                                                                p=float(p))
Tensor.log_normal_ = lambda self, mean=1.0, std=2.0, *, generator=None: _inplace(
    LOG_NORMAL, self, generator, mean=float(mean), std=float(std))
Tensor.cauchy_ = lambda self, median=0.0, sigma=1.0, *, generator=None: _inplace(
    CAUCHY, self, generator, median=float(median), sigma=float(sigma))
Tensor.bernoulli_ = _bernoulli_
Tensor.bernoulli = _bernoulli_method
Tensor.multinomial = lambda self, num_samples, replacement=False, *, generator=None: multinomial(
    self, num_samples, replacement, generator=generator)


# no jvp rules written: forward AD derives these tangents from the vjps
from .._core.op import JVP_FROM_VJP, mark_unsupported  # noqa: E402

mark_unsupported("jvp", JVP_FROM_VJP, "uniform", "normal", "random", "exponential", "geometric",
                 "log_normal", "cauchy", "bernoulli_scalar", "normal_tensor", "bernoulli",
                 "poisson")
