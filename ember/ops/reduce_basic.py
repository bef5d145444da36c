"""The reductions everything else leans on: sum, mean, sum_to_size, nansum, nanmean,
the cumulative family (cumsum, cumprod, cummax, cummin, logcumsumexp), and the
helpers reductions share: dim normalisation, gradient broadcasting and the
private gather/scatter-along-a-dim pair that value-selecting ops (max along a dim,
sort, topk, median, ...) use for their derivatives.

A reduction's derivative broadcasts the output gradient back over the reduced
dimensions (``expand_back``), written in ember ops.
"""
import numpy as np

from .._core import dtype as _dt
from .._core.ckernels import reduce as _ckred
from .._core.dispatch import overridable
from .._core import meta as _meta
from .._core.device import namespace_of
from .._core.tensor import _wrap_dim
from ._helpers import NeedsOverride, Op, Tensor, apply, apply_inplace, handle_override, \
    write_out, write_out_exact, xp_fn
from . import _cum_c
from . import _return_types as _rt
from ._batching import _batched_front, _dims_rule
from .decomposition_vjp import vjp_from_decomposition

__all__ = ["sum", "mean", "nansum", "nanmean", "cumsum", "cumprod", "cummax", "cummin",
           "logcumsumexp"]

_HALF = _dt.NP_HALVES
_F32 = np.dtype(np.float32)


def norm_dims(dim, ndim):
    """Reduction dims as a sorted tuple of non-negative ints (``None`` -> all)."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (int, np.integer)):
        d = _wrap_dim(int(dim), ndim)
        return (d,) if ndim else ()
    dims = tuple(sorted({_wrap_dim(int(d), ndim) for d in dim}))
    if len(dims) != len(dim):
        seen = [_wrap_dim(int(d), ndim) for d in dim]
        dup = next(d for i, d in enumerate(seen) if d in seen[:i])
        raise RuntimeError(f"dim {dup} appears multiple times in the list of dims")
    if not dims or not ndim:
        return tuple(range(ndim))
    return dims


def reduced_shape(shape, dims, keepdim):
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def expand_back(g, in_shape, dims, keepdim):
    """Broadcast a reduction's output gradient ``g`` back to the input shape."""
    if not keepdim and dims and len(dims) != len(in_shape):
        # (a full reduction's 0-d gradient expands as it is: no reshape op to dispatch)
        g = g.reshape(reduced_shape(in_shape, dims, True))
    return g.expand(in_shape)


def int64_acc_kernel(fn):
    """Kernel of sum-like reductions: bool/int inputs accumulate in int64, halves in float32."""
    def kernel(xp, x, dims, keepdim, dtype=None):
        if dtype is None:
            if x.dtype.kind in "biu":
                dtype = np.int64
            elif x.dtype in _HALF:
                return fn(xp, x, axis=dims, keepdims=keepdim, dtype=np.float32).astype(x.dtype)
        elif dtype in _HALF:
            return fn(xp, x, axis=dims, keepdims=keepdim, dtype=np.float32).astype(dtype)
        return fn(xp, x, axis=dims, keepdims=keepdim, dtype=dtype)
    return kernel


def _sum_np(xp, x, axis, keepdims, dtype=None):
    if dtype is None or dtype == x.dtype:  # float32/float64 in C, NumPy's values (threads)
        r = _ckred.sum_(x, axis, keepdims)
        if r is not None:
            return r
    if type(x) is np.ndarray:  # the ufunc's C reduce: np.sum adds four Python frames (~1 us)
        return np.add.reduce(x, axis=axis, dtype=dtype, keepdims=keepdims)
    return xp.sum(x, axis=axis, keepdims=keepdims, dtype=dtype)


_sum_kernel = int64_acc_kernel(_sum_np)


def _sum_vjp(ctx, g, x, dims, keepdim, dtype=None):
    return expand_back(g, ctx.in_meta[0][0], dims, keepdim)


SUM = Op("sum", _sum_kernel, _sum_vjp, save_inputs=False, shape=_meta.reduction("int64_acc"),
         jvp=lambda out, ts, x, dims, keepdim, dtype=None: None if ts[0] is None else apply(
             SUM, (ts[0],), {"dims": dims, "keepdim": keepdim}),
         category="reduction", batch=_dims_rule)


def _mean_kernel(xp, x, dims, keepdim, dtype=None):
    if dtype is None and x.dtype.kind in "biu":
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {_kind_name(x.dtype)}")
    if x.size == 0:  # without NumPy's "mean of empty slice" warning
        return xp.sum(x, axis=dims, keepdims=keepdim, dtype=dtype) / _numel(x.shape, dims)
    out_dt = x.dtype if dtype is None else np.dtype(dtype)
    if out_dt == x.dtype:  # float32/float64 in C, NumPy's values (threads)
        r = _ckred.mean(x, dims, keepdim)
        if r is not None:
            return r
    if out_dt in _HALF:
        return xp.mean(x, axis=dims, keepdims=keepdim, dtype=np.float32).astype(out_dt)
    return xp.mean(x, axis=dims, keepdims=keepdim, dtype=dtype)


def _numel(shape, dims):
    n = 1
    for d in dims:
        n *= shape[d]
    return n


def _kind_name(dt):
    from .._core.dispatch import _cat_name
    return _cat_name(dt if isinstance(dt, _dt.dtype) else _dt.FROM_NP[dt])


def _mean_vjp(ctx, g, x, dims, keepdim, dtype=None):
    shape = ctx.in_meta[0][0]
    return expand_back(g, shape, dims, keepdim) / _numel(shape, dims)


MEAN = Op("mean", _mean_kernel, _mean_vjp, save_inputs=False, shape=_meta.reduction(),
          jvp=lambda out, ts, x, dims, keepdim, dtype=None: None if ts[0] is None else apply(
              MEAN, (ts[0],), {"dims": dims, "keepdim": keepdim}),
          category="reduction", batch=_dims_rule)


def _np_dtype(dtype):
    return None if dtype is None else dtype.np


@overridable
def sum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Sum of the elements of ``input`` over ``dim`` (all dimensions if None)."""
    try:
        dims = norm_dims(dim, input.dim())
    except AttributeError:
        return handle_override(sum, (input,), {"dim": dim, "keepdim": keepdim, "dtype": dtype})
    params = {"dims": dims, "keepdim": keepdim}
    if dtype is None and out is not None:
        dtype = out.dtype  # torch sums into out's dtype (a float sum into an int64 out)
    if dtype is not None:
        params["dtype"] = dtype.np
    r = apply(SUM, (input,), params)
    return r if out is None else write_out(out, r)


@overridable
def mean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Mean of the elements of ``input`` over ``dim`` (all dimensions if None)."""
    try:
        dims = norm_dims(dim, input.dim())
    except AttributeError:
        return handle_override(mean, (input,), {"dim": dim, "keepdim": keepdim, "dtype": dtype})
    params = {"dims": dims, "keepdim": keepdim}
    if dtype is not None:
        params["dtype"] = dtype.np
    r = apply(MEAN, (input,), params)
    return r if out is None else write_out(out, r)


def _sum_to_size(self, *size):
    """Sum ``self`` down to ``size`` (the reverse of broadcasting)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    shape = self.shape
    if tuple(size) == shape:
        return self
    lead = len(shape) - len(size)
    if lead < 0:
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(size)
                                      if s == 1 and shape[lead + i] != 1)
    for i, s in enumerate(size):
        if s != 1 and s != shape[lead + i]:
            raise RuntimeError(f"size {{{list(size)}}} is not expandable to size "
                               f"{{{list(shape)}}}.")
    r = apply(SUM, (self,), {"dims": dims, "keepdim": True}) if dims else self
    if lead:
        r = r.reshape(tuple(size))
    return r


Tensor.sum = sum
Tensor.mean = mean
Tensor.sum_to_size = _sum_to_size


# ---- helpers shared by the reduction and sorting modules --------------------------------


def ndim_of(x):
    """``x.ndim`` of a Tensor; anything else goes to its ``__ember_function__`` override."""
    try:
        return x.dim()
    except AttributeError:
        raise NeedsOverride(x) from None


def public_fn(fn, name, doc):
    """Name and document a generated public function and make it overridable."""
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return overridable(fn)


def type_name(dt):
    """torch's name of an ember or NumPy dtype in messages ('Float', 'Long', ...)."""
    return _kind_name(dt)


def write_outs(out, results, cls, exact=False, inputs=None):
    """``out=(a, b)`` for ops returning a named tuple; ``exact``: each out must have its
    result's dtype (`write_out_exact`); ``inputs``: as `write_out`'s."""
    if out is None:
        return results
    if not isinstance(out, (tuple, list)) or len(out) != len(results):
        raise TypeError(f"{cls.__name__}(): argument 'out' must be tuple of {len(results)} "
                        f"Tensors")
    write = write_out_exact if exact else write_out
    return cls(*(write(o, r, inputs) for o, r in zip(out, results)))


def check_nonempty_dims(name, shape, dims):
    """torch's IndexError for reductions without identity over a dimension of size 0."""
    for d in dims:
        if shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def _gather_kernel(xp, x, idx, dim, unique=False):
    return xp.take_along_axis(x, idx, axis=dim)


def _gather_vjp(ctx, g, x, idx, dim, unique=False):
    return apply(SCATTER_ALONG, (g, idx), {"dim": dim, "shape": tuple(ctx.in_meta[0][0]),
                                          "accumulate": not unique}), None


def _scatter_kernel(xp, src, idx, dim, shape, accumulate=False):
    dt = src.dtype
    work = _F32 if dt in _HALF else dt
    out = xp.zeros(shape, dtype=work)
    if accumulate:
        ix = list(xp.indices(idx.shape, sparse=True))
        ix[dim] = idx
        xp.add.at(out, tuple(ix), src.astype(work, copy=False))
    else:
        xp.put_along_axis(out, idx, src, axis=dim)
    return out if work is dt else out.astype(dt)


def _scatter_vjp(ctx, g, src, idx, dim, shape, accumulate=False):
    return apply(GATHER_ALONG, (g, idx), {"dim": dim, "unique": not accumulate}), None


# take_along_axis / its adjoint (zeros with values put, or added, at indices along dim)
def _scatter_along_rule(op, args, bdims, params, batch_size):
    src = _batched_front(args[0], bdims[0], batch_size)
    idx = _batched_front(args[1], bdims[1], batch_size)
    d = params["dim"]
    return op(src, idx, **dict(params, dim=d + 1 if d >= 0 else d,
                               shape=(batch_size,) + tuple(params["shape"]))), 0



GATHER_ALONG = Op("_gather_along", _gather_kernel, _gather_vjp, save_inputs=(1,),
                  shape=lambda x, idx, **kw: (tuple(idx.shape), x.dtype), batch=_dims_rule)
SCATTER_ALONG = Op("_scatter_along", _scatter_kernel, _scatter_vjp, save_inputs=(1,),
                   shape=lambda src, idx, dim, shape, **kw: (shape, src.dtype),
                   batch=_scatter_along_rule)


def gather_along(x, idx, dim, unique=False):
    return apply(GATHER_ALONG, (x, idx), {"dim": dim, "unique": unique})


def select_back(g, idx, dim, in_shape, keepdim=True, unique=True):
    """Gradient of an op that picked ``x`` at ``idx`` along ``dim``: ``g`` put back there."""
    if not in_shape:
        return g.reshape(())
    if not keepdim:
        g = g.unsqueeze(dim)
        idx = idx.unsqueeze(dim)
    return apply(SCATTER_ALONG, (g, idx), {"dim": dim, "shape": tuple(in_shape),
                                          "accumulate": not unique})


# ---- nansum / nanmean -------------------------------------------------------------------
@overridable
def nansum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Sum of ``input`` over ``dim``, treating NaN as zero."""
    ndim_of(input)
    if input.dtype.is_complex:
        raise RuntimeError("nansum does not support complex inputs")
    x = input
    if input.dtype.is_floating_point:
        from .pointwise import where
        x = where(input.isnan(), 0, input)
    return sum(x, dim, keepdim, dtype=dtype, out=out)


@overridable
def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Mean of the non-NaN elements of ``input`` over ``dim``."""
    ndim_of(input)
    dt = input.dtype
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype "
                           f"but got {type_name(dt)}")
    if dt.is_complex:
        raise RuntimeError("nanmean: nansum does not support complex inputs")
    count = input.isnan().logical_not().sum(dim, keepdim)
    r = nansum(input, dim, keepdim, dtype=dtype) / count
    return r if out is None else write_out(out, r)


Tensor.nansum = nansum
Tensor.nanmean = nanmean


# ---- cumulative ops ---------------------------------------------------------------------
def _along(fn, x, dim, reverse):
    if reverse:
        xp = namespace_of(x)
        return xp.ascontiguousarray(xp.flip(fn(xp.flip(x, dim)), dim))
    return fn(x)


def _cum_kernel(ufunc, name):
    def kernel(xp, x, dim, reverse=False, dtype=None):
        dt = np.dtype(dtype) if dtype is not None else (
            np.dtype(np.int64) if x.dtype.kind in "biu" else x.dtype)
        if dt == np.bool_:  # a bool accumulator (dtype= or out=): torch has no such kernel
            raise NotImplementedError(f"\"{name}_out_cpu\" not implemented for 'Bool'")
        if x.ndim == 0:
            return x.astype(dt)
        work = _F32 if dt in _HALF else dt
        u = xp_fn(xp, ufunc)

        def run(a):
            if ufunc is np.add and a.dtype == work:  # torch's double accumulation, in C
                r = _cum_c.cumsum(a, dim)
                if r is not None:
                    return r
            return u.accumulate(a, axis=dim, dtype=work)
        r = _along(run, x, dim, reverse)
        return r.astype(dt, copy=False)
    return kernel


def _cumsum_vjp(ctx, g, x, dim, reverse=False, dtype=None):
    if not ctx.in_meta[0][0]:
        return g
    return apply(CUMSUM, (g,), {"dim": dim, "reverse": not reverse})


def _rcumsum(t, dim):
    return apply(CUMSUM, (t,), {"dim": dim, "reverse": True})


def _cumprod_vjp(ctx, g, x, dim, reverse=False, dtype=None):
    if not ctx.in_meta[0][0]:
        return g
    return apply(CUMPROD_BACKWARD, (x, g, ctx.out), {"dim": dim, "reverse": reverse})


def _cumprod_backward_kernel(xp, x, g, out, dim, reverse=False):
    """The decomposition's values in one pass over arrays; the quotient alone where
    the input has no zero (a branch on values is fine inside a kernel: a trace records the
    operator, whose value does not depend on the path taken)."""
    dt = np.result_type(x.dtype, out.dtype)
    work = _F32 if dt in _HALF else dt
    x, g, out = x.astype(work, copy=False), g.astype(work, copy=False), \
        out.astype(work, copy=False)
    if work.kind == "c":
        x, out = xp.conj(x), xp.conj(out)
    acc = lambda a: _along(lambda v: xp.cumsum(v, axis=dim), a, dim, not reverse)  # noqa: E731
    zero = x == 0
    if not zero.any():
        return (acc(g * out) / x).astype(dt, copy=False)
    seen = _along(lambda v: xp.cumsum(v, axis=dim), zero, dim, reverse)
    before = seen == 0
    first = zero & (seen == 1)
    a = acc(g * out) / xp.where(before, x, 1)
    c = _along(lambda v: xp.cumprod(v, axis=dim), xp.where(first, 1, x), dim, reverse)
    b = acc(g * c)
    return xp.where(before, a, xp.where(first, b, 0)).astype(dt, copy=False)


# its derivative (double backward, forward AD over a gradient) is its decomposition's
CUMPROD_BACKWARD = Op("_cumprod_backward", _cumprod_backward_kernel,
                      vjp_from_decomposition("_cumprod_backward"),
                      shape=lambda x, g, out, dim, reverse=False: (x.shape,
                                                                    _meta.promote(x, out)),
                      category="reduction", batch=_dims_rule)


def _cum_shape(x, dim, reverse=False, dtype=None):
    return x.shape, _meta.as_dtype(dtype) or (_dt.int64 if x.dtype.category < 2 else x.dtype)


CUMSUM = Op("cumsum", _cum_kernel(np.add, "cumsum"), _cumsum_vjp, save_inputs=False,
            shape=_cum_shape, category="reduction", batch=_dims_rule)
CUMPROD = Op("cumprod", _cum_kernel(np.multiply, "cumprod"), _cumprod_vjp, save_output=True,
             shape=_cum_shape, category="reduction", batch=_dims_rule)


def _cum_params(dim, dtype):
    return {"dim": dim} if dtype is None else {"dim": dim, "dtype": dtype.np}


def _def_cum(name, op):
    def public(input, dim, *, dtype=None, out=None):
        if dtype is None and out is not None:
            dtype = out.dtype  # torch accumulates in out's dtype, as sum does
        r = apply(op, (input,), _cum_params(_wrap_dim(dim, ndim_of(input)), dtype))
        return r if out is None else write_out(out, r, (input,))
    public = public_fn(public, name,
                     f"Cumulative {name[3:]} of the elements of ``input`` along ``dim``.")

    def meth(self, dim, dtype=None):
        return public(self, dim, dtype=dtype)

    def meth_(self, dim, dtype=None):
        return apply_inplace(op, self, (), _cum_params(_wrap_dim(dim, self.dim()), dtype))
    setattr(Tensor, name, meth)
    setattr(Tensor, name + "_", meth_)
    return public


cumsum = _def_cum("cumsum", CUMSUM)
cumprod = _def_cum("cumprod", CUMPROD)


def _cumext_kernel(ufunc):
    def kernel(xp, x, dim):
        if x.ndim == 0 or x.size == 0:
            return x.copy(), xp.zeros(x.shape, np.int64)
        w = x.astype(_F32) if x.dtype in _HALF else x
        v = xp_fn(xp, ufunc).accumulate(w, axis=dim)
        pos = xp.arange(x.shape[dim]).reshape([-1 if i == dim else 1 for i in range(x.ndim)])
        hit = w == v
        if w.dtype.kind in "fc":
            hit |= xp.isnan(w)
        # ties move the index to the latest position, as torch does
        idx = xp.maximum.accumulate(xp.where(hit, pos, 0), axis=dim)
        return v.astype(x.dtype, copy=False), idx
    return kernel


def _cumext_vjp(ctx, g, x, dim):
    return select_back(g[0], ctx.out[1], dim, ctx.in_meta[0][0], unique=False)


def _cumext_shape(x, dim):
    return (x.shape, x.dtype), (x.shape, _dt.int64)


CUMMAX = Op("cummax", _cumext_kernel(np.maximum), _cumext_vjp, save_inputs=False,
            save_output=(1,), n_out=2, nondiff_outputs=(1,), shape=_cumext_shape,
            category="reduction", batch=_dims_rule)
CUMMIN = Op("cummin", _cumext_kernel(np.minimum), _cumext_vjp, save_inputs=False,
            save_output=(1,), n_out=2, nondiff_outputs=(1,), shape=_cumext_shape,
            category="reduction", batch=_dims_rule)


@overridable
def cummax(input, dim, *, out=None):
    """Running maximum of ``input`` along ``dim`` and the index where each was found."""
    r = apply(CUMMAX, (input,), {"dim": _wrap_dim(dim, ndim_of(input))})
    return write_outs(out, _rt.cummax(*r), _rt.cummax)


@overridable
def cummin(input, dim, *, out=None):
    """Running minimum of ``input`` along ``dim`` and the index where each was found."""
    r = apply(CUMMIN, (input,), {"dim": _wrap_dim(dim, ndim_of(input))})
    return write_outs(out, _rt.cummin(*r), _rt.cummin)


def _lcse_kernel(xp, x, dim, reverse=False):
    if x.dtype.kind in "biu":
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for "
                                  f"'{type_name(x.dtype)}'")
    if x.ndim == 0:
        return x.copy()
    w = x.astype(_F32) if x.dtype in _HALF else x
    r = _along(lambda a: xp.logaddexp.accumulate(a, axis=dim), w, dim, reverse)
    return r.astype(x.dtype, copy=False)


def _lcse_vjp(ctx, g, x, dim, reverse=False):
    from .pointwise import where
    if not ctx.in_meta[0][0]:
        return g
    out = ctx.out
    # grad_k = sum_{j>=k} g_j exp(x_k - out_j), summed in log space, signs kept apart; the
    # finite floor (not -inf) keeps the second derivative free of inf - inf
    back = {"dim": dim, "reverse": not reverse}
    low = float(np.finfo(np.float32 if x.dtype.np in _HALF else x.dtype.np).min)
    pos = apply(LOGCUMSUMEXP, (where(g > 0, g.log(), low) - out,), back)
    neg = apply(LOGCUMSUMEXP, (where(g < 0, (-g).log(), low) - out,), back)
    return (x + pos).exp() - (x + neg).exp()


LOGCUMSUMEXP = Op("logcumsumexp", _lcse_kernel, _lcse_vjp, save_output=True,
                  shape=_meta.same,
                  category="reduction", batch=_dims_rule)


@overridable
def logcumsumexp(input, dim, *, out=None):
    """``log(cumsum(exp(input), dim))``, computed stably."""
    r = apply(LOGCUMSUMEXP, (input,), {"dim": _wrap_dim(dim, ndim_of(input))})
    return r if out is None else write_out(out, r, (input,))


Tensor.cummax = cummax
Tensor.cummin = cummin
Tensor.logcumsumexp = logcumsumexp


# no jvp rules written: forward AD derives these tangents from the vjps
from .._core.op import JVP_FROM_VJP, mark_unsupported  # noqa: E402

mark_unsupported("jvp", JVP_FROM_VJP, "_gather_along", "_scatter_along", "cumsum", "cumprod",
                 "_cumprod_backward", "cummax", "cummin", "logcumsumexp")
