"""Reductions: prod, max/min (whole-tensor, along a dim, and binary), amax/amin, aminmax,
argmax/argmin, var/std (+ var_mean/std_mean), logsumexp, norm, any/all, count_nonzero.

Hot ones (amax, max, var, std, logsumexp, norm) are primitives with fused NumPy
kernels; derivatives follow torch's formulas (ties share the gradient of
amax/amin and of the whole-tensor max/min evenly; max along a dim sends it to the
returned index).
"""
import builtins
import math
import warnings

import numpy as np

from .._core import dtype as _dt
from .._core.ckernels import reduce as _ckred
from .._core.dispatch import overridable
from .._core import meta as _meta
from .._core.device import namespace_of
from .._core.tensor import _wrap_dim
from . import _return_types as return_types
from ._batching import _dims_rule
from ._batching_index import _arg_rule
from ._helpers import (Op, Tensor, _E, apply, cj, default_float_np, write_out,
                       write_out_exact)
from .pointwise import maximum, minimum, where
from .reduce_basic import (SUM, _F32, _HALF, _numel, check_nonempty_dims,
                           expand_back, int64_acc_kernel, ndim_of, norm_dims, public_fn,
                           reduced_shape, select_back, type_name, write_outs)

__all__ = ["return_types", "prod", "max", "min", "amax", "amin", "aminmax", "argmax", "argmin",
           "var", "std", "var_mean", "std_mean", "logsumexp", "norm", "any", "all",
           "count_nonzero"]

_INF = math.inf


# ---- prod -------------------------------------------------------------------------------
def _prod_vjp(ctx, g, x, dims, keepdim, dtype=None):
    shape = ctx.in_meta[0][0]
    if not shape:
        return g
    g = expand_back(g, shape, dims, keepdim)
    if 0 in shape:
        return g  # no elements: an empty gradient
    if len(dims) == 1:
        return g * cj(_prod_others(x, dims[0]))
    return g * cj(_prod_others(x.reshape(-1), 0).reshape(shape))


from .._core.op import JVP_FROM_VJP  # noqa: E402


def _prod_others_kernel(xp, x, dim):
    # without zeros the quotient is exact and cheap (one reduction; torch uses it too); the
    # exclusive products are two scans.  A branch on values is fine inside a kernel: a trace
    # records the operator, whose value does not depend on the path taken.
    dt = x.dtype
    if dt in _HALF:
        x = x.astype(_F32)
    if not (x == 0).any():
        return (xp.prod(x, axis=dim, keepdims=True) / x).astype(dt, copy=False)
    n = x.shape[dim]
    r = xp.ones_like(x)
    if n > 1:
        head = [slice(None)] * x.ndim
        tail = list(head)
        head[dim], tail[dim] = slice(0, n - 1), slice(1, n)
        head, tail = tuple(head), tuple(tail)
        xp.cumprod(x[head], axis=dim, out=r[tail])
        rev = [slice(None)] * x.ndim
        rev[dim] = slice(None, None, -1)
        rev = tuple(rev)
        r[head] *= xp.cumprod(x[tail][rev], axis=dim)[rev]
    return r.astype(dt, copy=False)


def _prod_others_vjp(ctx, h, x, dim):
    """Through the exclusive products E (from the left) and F (from the right), P = E F:
    cumprod's backward for each (whose own derivative is exact at zeros too)."""
    from .creation import ones_like, zeros_like
    from .reduce_basic import CUMPROD, CUMPROD_BACKWARD
    from .shape import cat
    n = x.shape[dim]
    if n < 2:
        return zeros_like(x)
    head, tail = x.narrow(dim, 0, n - 1), x.narrow(dim, 1, n - 1)
    c = apply(CUMPROD, (head,), {"dim": dim})
    r = apply(CUMPROD, (tail,), {"dim": dim, "reverse": True})
    one = ones_like(x.narrow(dim, 0, 1))
    zero = zeros_like(one)
    e = cat([one, c], dim)
    f = cat([r, one], dim)
    g_head = apply(CUMPROD_BACKWARD, (head, (h * cj(f)).narrow(dim, 1, n - 1), c),
                   {"dim": dim, "reverse": False})
    g_tail = apply(CUMPROD_BACKWARD, (tail, (h * cj(e)).narrow(dim, 0, n - 1), r),
                   {"dim": dim, "reverse": True})
    return cat([g_head, zero], dim) + cat([zero, g_tail], dim)


# the product of the other elements of each slice along ``dim``: the exclusive cumulative
# product from the left times the one from the right, exact with any number of zeros without
# testing values (a traced backward computes what eager does)
PROD_OTHERS = Op("_prod_others", _prod_others_kernel, _prod_others_vjp,
                 shape=lambda x, dim: (x.shape, x.dtype), category="reduction",
                 batch=_dims_rule, unsupported={"jvp": JVP_FROM_VJP})


def _prod_others(x, dim):
    return apply(PROD_OTHERS, (x,), {"dim": dim})


PROD = Op("prod", int64_acc_kernel(lambda xp, x, **kw: xp.prod(x, **kw)), _prod_vjp,
          shape=_meta.reduction("int64_acc"), category="reduction",
          batch=_dims_rule)


@overridable
def prod(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Product of the elements of ``input`` (over dimension ``dim`` if given)."""
    n = ndim_of(input)
    if dim is not None and not isinstance(dim, (int, np.integer)):
        raise TypeError(f"prod(): argument 'dim' must be int, not {type(dim).__name__}")
    params = {"dims": norm_dims(dim, n), "keepdim": keepdim if dim is not None else False}
    if dtype is None and out is not None:
        dtype = out.dtype  # torch multiplies in out's dtype, as sum does
    if dtype is not None:
        params["dtype"] = dtype.np
    r = apply(PROD, (input,), params)
    return r if out is None else write_out(out, r)


Tensor.prod = prod


# ---- max / min / amax / amin ------------------------------------------------------------
def _no_complex(name, x):
    if x.dtype.kind == "c":
        raise RuntimeError(f"{name}(): does not support complex input")


def _extreme_kernel(fn, name):
    largest = fn is np.max

    def kernel(xp, x, dims=None, keepdim=False):
        _no_complex(name, x)
        if dims is not None:  # rows or columns of float32/float64 in C (threads)
            r = _ckred.extreme(x, dims, keepdim, largest)
            if r is not None:
                return r
        return (fn if xp is np else getattr(xp, fn.__name__))(x, axis=dims, keepdims=keepdim)
    return kernel


def _amax_vjp(ctx, g, x, dims, keepdim):
    # torch's scale_grad_by_count: ties share the gradient evenly
    shape = ctx.in_meta[0][0]
    mask = x == expand_back(ctx.out, shape, dims, keepdim)
    return expand_back(g, shape, dims, keepdim) / mask.sum(dims, keepdim=True) * mask


def _evenly_vjp(ctx, g, x):
    out = ctx.out
    mask = (x == out) | (x.isnan() & out.isnan())
    return where(mask, g / mask.sum(), 0)


AMAX = Op("amax", _extreme_kernel(np.max, "amax"), _amax_vjp, save_output=True,
          shape=_meta.reduction(), category="reduction", batch=_dims_rule)
AMIN = Op("amin", _extreme_kernel(np.min, "amin"), _amax_vjp, save_output=True,
          shape=_meta.reduction(), category="reduction", batch=_dims_rule)
MAX = Op("max", _extreme_kernel(np.max, "max"), _evenly_vjp, save_output=True,
         shape=_meta.reduction(), category="reduction", batch=_dims_rule)
MIN = Op("min", _extreme_kernel(np.min, "min"), _evenly_vjp, save_output=True,
         shape=_meta.reduction(), category="reduction", batch=_dims_rule)


def _extreme_dim_kernel(argfn, name):
    def kernel(xp, x, dim, keepdim):
        _no_complex(name, x)
        if x.ndim == 0:
            return x.copy(), xp.zeros((), np.int64)
        idx = (argfn if xp is np else getattr(xp, argfn.__name__))(x, axis=dim, keepdims=True)
        v = xp.take_along_axis(x, idx, axis=dim)
        if not keepdim:
            idx, v = idx.squeeze(dim), v.squeeze(dim)
        return v, idx.astype(np.int64, copy=False)
    return kernel


def _extreme_dim_vjp(ctx, g, x, dim, keepdim):
    return select_back(g[0], ctx.out[1], dim, ctx.in_meta[0][0], keepdim)


def _extreme_dim_shape(x, dim, keepdim):
    s = _meta.reduce_shape(x.shape, (dim,), keepdim)
    return (s, x.dtype), (s, _dt.int64)


MAX_DIM = Op("max_dim", _extreme_dim_kernel(np.argmax, "max"), _extreme_dim_vjp,
             save_inputs=False, save_output=(1,), n_out=2, nondiff_outputs=(1,),
             shape=_extreme_dim_shape, category="reduction", batch=_dims_rule)
MIN_DIM = Op("min_dim", _extreme_dim_kernel(np.argmin, "min"), _extreme_dim_vjp,
             save_inputs=False, save_output=(1,), n_out=2, nondiff_outputs=(1,),
             shape=_extreme_dim_shape, category="reduction", batch=_dims_rule)


def _check_reducible(name, input, dims, all_dims):
    """torch's errors for reductions without identity (max, amax, argmax, ...) on empties."""
    shape = input.shape
    if all_dims and input.numel() == 0:
        raise (IndexError if name in ("argmax", "argmin") else RuntimeError)(
            f"{name}(): Expected reduction dim to be specified for input.numel() == 0."
            + ("" if name in ("argmax", "argmin") else
               " Specify the reduction dim with the 'dim' argument."))
    check_nonempty_dims(name, shape, dims)


def _def_extreme(name, whole, along, binary, rt):
    def public(input, dim=None, keepdim=False, *, out=None):
        if isinstance(dim, Tensor):
            return binary(input, dim, out=out)
        n = ndim_of(input)
        if dim is None:
            _check_reducible(name, input, (), True)
            r = apply(whole, (input,), _E)
            return r if out is None else write_out(out, r)
        d = _wrap_dim(dim, n)
        _check_reducible(name, input, (d,) if n else (), False)
        r = apply(along, (input,), {"dim": d, "keepdim": keepdim})
        return write_outs(out, rt(*r), rt, exact=True)
    return public_fn(public, name,
                     f"The {name}imum of all elements of ``input``; with ``dim``, the named "
                     f"tuple (values, indices) of the {name}ima along ``dim``; with a tensor "
                     f"``other``, ``{name}imum(input, other)``.")


max = _def_extreme("max", MAX, MAX_DIM, maximum, return_types.max)
min = _def_extreme("min", MIN, MIN_DIM, minimum, return_types.min)


def _def_amax(name, op):
    def public(input, dim=(), keepdim=False, *, out=None):
        n = ndim_of(input)
        dims = norm_dims(dim if dim != () else None, n)
        _check_reducible(name, input, dims, dim is None or (
            not isinstance(dim, (int, np.integer)) and len(dim) == 0))
        r = apply(op, (input,), {"dims": dims, "keepdim": keepdim})
        return r if out is None else write_out(out, r)
    return public_fn(public, name,
                     f"The {name[1:]}imum of ``input`` over the dimensions ``dim`` (all if empty).")


amax = _def_amax("amax", AMAX)
amin = _def_amax("amin", AMIN)


@overridable
def aminmax(input, *, dim=None, keepdim=False, out=None):
    """The minimum and maximum of ``input`` (along ``dim`` if given), as a named tuple."""
    if dim is not None and not isinstance(dim, (int, np.integer)):
        raise TypeError(f"aminmax(): argument 'dim' must be int, not {type(dim).__name__}")
    n = ndim_of(input)
    dims = norm_dims(dim, n)
    if input.numel() == 0:
        if dim is None:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                               "operation has no identity.")
        check_nonempty_dims("aminmax", input.shape, dims)
    p = {"dims": dims, "keepdim": keepdim}
    r = (apply(AMIN, (input,), p), apply(AMAX, (input,), p))
    return write_outs(out, return_types.aminmax(*r), return_types.aminmax, exact=True)


Tensor.max = max
Tensor.min = min
Tensor.amax = amax
Tensor.amin = amin
Tensor.aminmax = aminmax


# ---- argmax / argmin --------------------------------------------------------------------
def _arg_kernel(fn, name):
    def kernel(xp, x, dim=None, keepdim=False):
        if x.dtype.kind == "b":
            raise RuntimeError(f"{name}(): does not support bool input")
        _no_complex(name, x)
        f = fn if xp is np else getattr(xp, fn.__name__)
        if dim is None:
            r = xp.asarray(f(x.reshape(-1)))
            return r.reshape((1,) * x.ndim) if keepdim else r
        if x.ndim == 0:
            return xp.zeros((), np.int64)
        return f(x, axis=dim, keepdims=keepdim).astype(np.int64, copy=False)
    return kernel


ARGMAX = Op("argmax", _arg_kernel(np.argmax, "argmax"), None, differentiable=False,
            save_inputs=False, category="reduction", batch=_arg_rule,
            shape=_meta.reduction("int64"))
ARGMIN = Op("argmin", _arg_kernel(np.argmin, "argmin"), None, differentiable=False,
            save_inputs=False, category="reduction", batch=_arg_rule,
            shape=_meta.reduction("int64"))


def _def_arg(name, op):
    def public(input, dim=None, keepdim=False, *, out=None):
        n = ndim_of(input)
        if dim is not None and not isinstance(dim, (int, np.integer)):  # torch's parser first
            raise TypeError(f"{name}(): argument 'dim' (position 2) must be int, not "
                            f"{type(dim).__name__}")
        if input.dtype == _dt.bool:
            raise RuntimeError(f"{name}(): does not support bool input")
        params = {"keepdim": keepdim}
        if dim is not None:
            params["dim"] = d = _wrap_dim(int(dim), n)
            _check_reducible(name, input, (d,) if n else (), False)
        else:
            _check_reducible(name, input, (), True)
        r = apply(op, (input,), params)
        return r if out is None else write_out_exact(out, r)
    return public_fn(public, name,
                     f"The index of the {name[3:]}imum of ``input`` (flattened, or along "
                     f"``dim``); the first one on ties.")


argmax = _def_arg("argmax", ARGMAX)
argmin = _def_arg("argmin", ARGMIN)
Tensor.argmax = argmax
Tensor.argmin = argmin


# ---- var / std --------------------------------------------------------------------------
def _var_np(xp, x, dims, correction, keepdim):
    w = x.astype(_F32) if x.dtype in _HALF else x
    if x.size == 0:
        return xp.full(reduced_shape(x.shape, dims, keepdim), np.nan, dtype=xp.abs(w[:0]).dtype)
    d = w - xp.mean(w, axis=dims, keepdims=True)
    sq = d.real * d.real + d.imag * d.imag if d.dtype.kind == "c" else d * d
    dof = builtins.max(0, _numel(x.shape, dims) - correction)
    return xp.asarray(xp.sum(sq, axis=dims, keepdims=keepdim)) / dof


def _var_kernel(xp, x, dims, correction, keepdim):
    r = _var_np(xp, x, dims, correction, keepdim)
    return r.astype(x.dtype) if x.dtype in _HALF else r


def _std_kernel(xp, x, dims, correction, keepdim):
    r = xp.sqrt(_var_np(xp, x, dims, correction, keepdim))
    return r.astype(x.dtype) if x.dtype in _HALF else r


def _var_back(g, x, dims, correction, keepdim):
    shape = tuple(x.shape)
    dof = builtins.max(0, _numel(shape, dims) - correction)
    scale = 2.0 / dof if dof else _INF
    return scale * expand_back(g, shape, dims, keepdim) * (x - x.mean(dims, keepdim=True))


def _var_vjp(ctx, g, x, dims, correction, keepdim):
    return _var_back(g, x, dims, correction, keepdim)


def _std_vjp(ctx, g, x, dims, correction, keepdim):
    out = ctx.out
    return _var_back(where(out == 0, 0, g / (2 * out)), x, dims, correction, keepdim)


_var_shape = _meta.reduction("real")


VAR = Op("var", _var_kernel, _var_vjp, shape=_var_shape, category="reduction", batch=_dims_rule)
STD = Op("std", _std_kernel, _std_vjp, save_output=True, shape=_var_shape, category="reduction",
         batch=_dims_rule)


def _var_params(name, input, dim, unbiased, keepdim, correction):
    if isinstance(dim, bool):  # legacy std(input, unbiased)
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise RuntimeError("Cannot specify both unbiased and correction")
    if correction is None:
        correction = 0 if unbiased is False else 1
    dims = norm_dims(dim, ndim_of(input))
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError("std and var only support floating point and complex dtypes")
    if _numel(input.shape, dims) - correction <= 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less "
                      f"than the reduction factor (input numel divided by output numel).",
                      UserWarning, stacklevel=4)
    return {"dims": dims, "correction": correction, "keepdim": keepdim}


def _def_var(name, op):
    def public(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
        r = apply(op, (input,), _var_params(name, input, dim, unbiased, keepdim, correction))
        return r if out is None else write_out(out, r)
    public = public_fn(public, name,
                     f"The {'standard deviation' if name == 'std' else 'variance'} of "
                     f"``input`` over ``dim`` with Bessel's ``correction`` (``unbiased`` is "
                     f"the legacy spelling).")

    def with_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
        p = _var_params(name + "_mean", input, dim, unbiased, keepdim, correction)
        r = (apply(op, (input,), p), input.mean(p["dims"], keepdim))
        if out is not None:
            return tuple(write_out(o, x) for o, x in zip(out, r))
        return r
    return public, public_fn(with_mean, name + "_mean",
                             f"``({name}(input, ...), mean(input, ...))`` in one call.")


var, var_mean = _def_var("var", VAR)
std, std_mean = _def_var("std", STD)
Tensor.var = var
Tensor.std = std


# ---- logsumexp --------------------------------------------------------------------------
def _lse_kernel(xp, x, dims, keepdim):
    dt = x.dtype
    w = x.astype(default_float_np()) if dt.kind in "biu" else (x.astype(_F32) if dt in _HALF
                                                                else x)
    if w.size == 0:
        return xp.full(reduced_shape(x.shape, dims, keepdim), -_INF, dtype=dt if dt.kind not in
                       "biu" else w.dtype)
    m = xp.max(w, axis=dims, keepdims=True)
    m = xp.where(xp.isfinite(m), m, 0)
    r = xp.log(xp.sum(xp.exp(w - m), axis=dims, keepdims=True)) + m
    if not keepdim:
        r = r.reshape(reduced_shape(x.shape, dims, False))
    return r.astype(dt) if dt in _HALF else r


def _lse_vjp(ctx, g, x, dims, keepdim):
    shape = ctx.in_meta[0][0]
    return expand_back(g, shape, dims, keepdim) * (x - expand_back(ctx.out, shape, dims,
                                                                   keepdim)).exp()


def _lse_jvp(out, ts, x, dims, keepdim):
    t = ts[0]
    if t is None:
        return None
    w = t * (x - expand_back(out, tuple(x.shape), dims, keepdim)).exp()
    return apply(SUM, (w,), {"dims": dims, "keepdim": keepdim})


LOGSUMEXP = Op("logsumexp", _lse_kernel, _lse_vjp, save_output=True,
               shape=_meta.reduction("float"), category="reduction", batch=_dims_rule, jvp=_lse_jvp)


@overridable
def logsumexp(input, dim, keepdim=False, *, out=None):
    """``log(sum(exp(input), dim))``, computed stably."""
    r = apply(LOGSUMEXP, (input,), {"dims": norm_dims(dim, ndim_of(input)), "keepdim": keepdim})
    return r if out is None else write_out(out, r)


Tensor.logsumexp = logsumexp


# ---- norm -------------------------------------------------------------------------------
_EMPTY_INF = ("linalg.vector_norm cannot compute the {} norm on an empty tensor because the "
              "operation does not have an identity")


_SUMSQ_BLOCK = 4096


def _sumsq_trailing(x, dims):
    """The sum of squares of a C-contiguous real float32/float64 NumPy array over its trailing
    ``dims`` (all of them, or the last few), or None when it does not fit.  Blocks of 4096 are
    BLAS dot products (no temporaries: ~6x faster than square-then-sum); the block sums add
    pairwise, so the error stays near NumPy's pairwise sum's (torch's own float32 norm
    accumulates in vector lanes, less accurately)."""
    nd = x.ndim
    if (type(x) is not np.ndarray or x.dtype not in _SUMSQ_DTYPES or not x.flags.c_contiguous
            or x.size == 0 or tuple(sorted(dims)) != tuple(range(nd - len(dims), nd))):
        return None
    K = math.prod(x.shape[nd - len(dims):])
    rows = x.reshape(-1, K)
    nb, tail = divmod(K, _SUMSQ_BLOCK) if K > _SUMSQ_BLOCK else (0, K)
    r = 0
    if nb:
        st = x.dtype.itemsize
        blocks = np.lib.stride_tricks.as_strided(
            rows, (rows.shape[0], nb, 1, _SUMSQ_BLOCK), (K * st, _SUMSQ_BLOCK * st, 0, st))
        r = np.matmul(blocks, blocks.swapaxes(-1, -2)).reshape(rows.shape[0], nb).sum(1)
    if tail:
        t = rows[:, K - tail:, None]
        r = r + np.matmul(t.swapaxes(-1, -2), t).reshape(rows.shape[0])
    return r.reshape(x.shape[:nd - len(dims)])


_SUMSQ_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _norm_kernel(xp, x, ord, dims, keepdim):
    if ord == 2 and dims:
        ss = _sumsq_trailing(x, dims)
        if ss is not None:
            r = np.sqrt(np.asarray(ss))
            return r.reshape(reduced_shape(x.shape, dims, True)) if keepdim else r
    a = xp.abs(x)
    rdt = a.dtype
    w = a.astype(_F32) if rdt in _HALF else a
    kw = {"axis": dims, "keepdims": keepdim}
    # inf and negative orders have no identity: an empty reduction has no value
    if (ord == _INF or ord < 0) and (builtins.any(x.shape[d] == 0 for d in dims) or
                                     (x.size == 0 and not dims)):
        raise RuntimeError(_EMPTY_INF.format(f"{ord:g}"))
    if ord in (_INF, -_INF):
        r = xp.max(w, **kw) if ord > 0 else xp.min(w, **kw)
    elif ord == 0:
        r = xp.sum(w != 0, dtype=w.dtype, **kw)
    elif ord == 1:
        r = xp.sum(w, **kw)
    elif ord == 2:
        r = xp.sqrt(xp.sum(w * w, **kw))
    else:
        r = xp.sum(w ** ord, **kw) ** (1.0 / ord)
    return xp.asarray(r).astype(rdt, copy=False)


def _norm_vjp(ctx, g, x, ord, dims, keepdim):
    shape = ctx.in_meta[0][0]
    g = expand_back(g, shape, dims, keepdim)
    out = expand_back(ctx.out, shape, dims, keepdim)
    if ord == 0:
        return g * 0
    if ord == 1:
        return g * x.sgn()
    zero = out == 0
    if ord == 2:
        return g * where(zero, 0, x / where(zero, 1, out))
    if ord in (_INF, -_INF):
        mask = (x.abs() == out) | (x.isnan() & out.isnan())
        return x.sgn() * mask * (g / mask.sum(dims, keepdim=True))
    if ord < 1:
        scaled = where(x == 0, 0, x.sgn() * x.abs().pow(ord - 1))
        return scaled * g * out.pow(1 - ord)
    scaled = x.sgn() * x.abs().pow(ord - 1) if ord < 2 else x * x.abs().pow(ord - 2)
    return scaled * where(zero, 0, g / out.pow(ord - 1))


_norm_shape = _meta.reduction("real")


NORM = Op("norm", _norm_kernel, _norm_vjp, save_output=True, shape=_norm_shape,
          category="reduction", batch=_dims_rule)


def _nuc_np(x, dims):
    xp = namespace_of(x)
    m = xp.moveaxis(x, dims, (-2, -1))
    return m, xp.linalg.svd(m, compute_uv=False).sum(-1)


def _nuc_kernel(xp, x, dims, keepdim):
    if x.dtype in _HALF:
        raise RuntimeError(f"linalg.matrix_norm: Low precision dtypes not supported. Got "
                           f"{type_name(x.dtype)}")
    w = x.astype(_F32) if x.dtype in _HALF else x
    r = _nuc_np(w, dims)[1]
    if keepdim:
        r = r.reshape(reduced_shape(x.shape, dims, True))
    return r.astype(xp.abs(x[:0]).dtype, copy=False)


def _nuc_basis_kernel(xp, x, dims):
    m = xp.moveaxis(x, dims, (-2, -1))
    u, _, vh = xp.linalg.svd(m, full_matrices=False)
    return xp.ascontiguousarray(xp.moveaxis(u @ vh, (-2, -1), dims))


# d||X||_* / dX = U V^H (the basis is treated as a constant: first derivatives only)
NUC_BASIS = Op("_nuc_basis", _nuc_basis_kernel, None, differentiable=False, shape=_meta.same,
               batch=_dims_rule)
NUC = Op("nuclear_norm", _nuc_kernel,
         lambda ctx, g, x, dims, keepdim: expand_back(g, ctx.in_meta[0][0], dims, keepdim) *
         apply(NUC_BASIS, (x.detach(),), {"dims": dims}), shape=_norm_shape,
         category="reduction", batch=_dims_rule)


def _norm_ord(p):
    if isinstance(p, str):
        if p == "fro":
            return 2.0
        raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
    return float(p)


@overridable
def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """The vector p-norm of ``input`` over ``dim`` (all dims if None), or its Frobenius ('fro')
    or nuclear ('nuc') matrix norm over two dims."""
    n = ndim_of(input)
    dt = input.dtype
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {type_name(dt)}")
    if dtype is not None:
        if dtype != dt and _dt.promote_types(dt, dtype) != dtype:
            raise RuntimeError(f"linalg.vector_norm: the dtype of the input ({type_name(dt)}) "
                               f"should be convertible without narrowing to the specified dtype "
                               f"({type_name(dtype)})")
        input = input.to(dtype)
    if isinstance(p, str) and dim is not None:
        dl = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
        if len(dl) > 2 or (p == "nuc" and len(dl) != 2):
            raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                               f"{' '.join(str(d) for d in dl)}")
    if p == "nuc":
        if dim is None and n != 2:
            raise RuntimeError(f"linalg.matrix_norm: The input tensor A must have at least 2 "
                               f"dimensions.")
        dims = tuple(_wrap_dim(d, n) for d in (dim if dim is not None else (0, 1)))
        r = apply(NUC, (input,), {"dims": dims, "keepdim": keepdim})
    else:
        r = apply(NORM, (input,), {"ord": _norm_ord(p), "dims": norm_dims(dim, n),
                                   "keepdim": keepdim})
    return r if out is None else write_out_exact(out, r)


Tensor.norm = lambda self, p="fro", dim=None, keepdim=False, dtype=None: norm(
    self, p, dim, keepdim, dtype=dtype)


# ---- any / all / count_nonzero ----------------------------------------------------------
def _logical_kernel(fn):
    def kernel(xp, x, dims, keepdim):
        r = (fn if xp is np else getattr(xp, fn.__name__))(x, axis=dims, keepdims=keepdim)
        return r.astype(np.uint8) if x.dtype == np.uint8 else xp.asarray(r)
    return kernel


def _logical_shape(x, dims, keepdim):
    # torch keeps uint8 for any/all of uint8 tensors
    return _meta.reduce_shape(x.shape, dims, keepdim), _dt.uint8 if x.dtype is _dt.uint8 \
        else _dt.bool


ANY = Op("any", _logical_kernel(np.any), None, differentiable=False, save_inputs=False,
         category="reduction", batch=_dims_rule, shape=_logical_shape)
ALL = Op("all", _logical_kernel(np.all), None, differentiable=False, save_inputs=False,
         category="reduction", batch=_dims_rule, shape=_logical_shape)


def _def_logical(name, op):
    def public(input, dim=None, keepdim=False, *, out=None):
        r = apply(op, (input,), {"dims": norm_dims(dim, ndim_of(input)), "keepdim": keepdim})
        return r if out is None else write_out(out, r)
    return public_fn(public, name,
                     f"Whether {name} elements of ``input`` (over ``dim`` if given) evaluate "
                     f"to True.")


any = _def_logical("any", ANY)
all = _def_logical("all", ALL)
COUNT_NONZERO = Op("count_nonzero", lambda xp, x, dims: xp.asarray(
    xp.count_nonzero(x, axis=dims)).astype(np.int64), None, differentiable=False,
    save_inputs=False, category="reduction", batch=_dims_rule, shape=_meta.reduction("int64"))


@overridable
def count_nonzero(input, dim=None):
    """The number of non-zero values of ``input`` (over ``dim`` if given)."""
    return apply(COUNT_NONZERO, (input,), {"dims": norm_dims(dim, ndim_of(input))})


Tensor.any = any
Tensor.all = all
Tensor.count_nonzero = count_nonzero


# no jvp rules written: forward AD derives these tangents from the vjps
from .._core.op import JVP_FROM_VJP, mark_unsupported  # noqa: E402

mark_unsupported("jvp", JVP_FROM_VJP, "prod", "amax", "amin", "max", "min", "max_dim", "min_dim",
                 "var", "std", "norm", "nuclear_norm")
