"""Assorted torch functions real scripts use: isin, tril/triu_indices, cov, corrcoef, dist,
ravel, unravel_index, block_diag, trapezoid/trapz/cumulative_trapezoid, histogram, renorm.

Most are composites of ember operators (so gradients, vmap and tracing come for free);
``isin`` and ``histogram`` are primitive operators (NumPy does them in one pass), with
batching rules of their own.
"""
import builtins
import functools
import math
import warnings

import numpy as np

from .._core import dtype as _dt
from .._core import meta as _meta
from .._core.device import backend_for_type, namespace_of
from ._helpers import (Op, Tensor, _E, apply, check_tensor, no_derivative, overridable,
                       promote_np, type_name)
from ._return_types import structseq
from .creation import _finish, _linspace_kernel, zeros
from .pointwise import where
from .shape import cat

__all__ = ["isin", "tril_indices", "triu_indices", "cov", "corrcoef", "dist", "ravel",
           "unravel_index", "block_diag", "trapezoid", "trapz", "cumulative_trapezoid",
           "histogram", "renorm"]

_histogram_type = structseq("histogram", ("hist", "bin_edges"))


# ---- isin -------------------------------------------------------------------------------
def _isin_kernel(xp, elements, test, assume_unique=False, invert=False):
    e = xp.asarray(elements)
    t = xp.asarray(test)
    for a in (e, t):
        if a.dtype.kind in "cb":
            raise RuntimeError(f"Unsupported input type encountered for isin(): "
                               f"{type_name(a.dtype)}")
    dt = promote_np(elements, test)
    if dt.kind == "V" or dt == np.float16:
        dt = np.dtype(np.float32)
    return xp.isin(e.astype(dt, copy=False), t.astype(dt, copy=False).reshape(-1),
                   assume_unique=assume_unique, invert=invert)


def _isin_shape(elements, test, **params):
    return (elements.shape if isinstance(elements, _meta.TensorMeta) else ()), _dt.bool


def _isin_batch(op, args, bdims, params, batch_size):
    e, t = args
    be, bt = bdims
    if bt is None:  # elementwise in ``elements``: the batch dim stays where it is
        return op(e, t, **params), be
    # one test set per example: compare each example's elements with its own set
    if not isinstance(e, Tensor):
        e = t.new_tensor(e)
    e = e.movedim(be, 0) if be is not None else e.unsqueeze(0).expand(batch_size, *e.shape)
    t = t.movedim(bt, 0).reshape(batch_size, 1, -1)
    flat = e.reshape(batch_size, -1, 1)
    hit = (flat == t).any(-1).reshape(e.shape)
    return (~hit if params.get("invert") else hit), 0


ISIN = Op("isin", _isin_kernel, None, shape=_isin_shape, differentiable=False,
          save_inputs=False, batch=_isin_batch)


@overridable
def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Tests if each element of ``elements`` is in ``test_elements``."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError(f"isin() received an invalid combination of arguments - got "
                        f"({type(elements).__name__}, {type(test_elements).__name__})")
    params = {"assume_unique": bool(assume_unique), "invert": bool(invert)}
    return apply(ISIN, (elements, test_elements), params if assume_unique or invert else _E)


# ---- tril_indices, triu_indices ---------------------------------------------------------
def _tri_indices(name, np_fn, row, col, offset, dtype, device):
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    dtype = _dt.int64 if dtype is None else dtype
    if not dtype.is_floating_point and dtype.is_complex is False and dtype != _dt.bool:
        r, c = np_fn(row, offset, col)
        return _finish(np.stack([r, c]).astype(dtype.np), device, False)
    raise NotImplementedError(f"\"{name}\" not implemented for '{type_name(dtype.np)}'")


@overridable
def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """Indices of the lower triangular part of a ``row``-by-``col`` matrix (2 x N)."""
    return _tri_indices("tril_indices", np.tril_indices, row, col, offset, dtype, device)


@overridable
def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """Indices of the upper triangular part of a ``row``-by-``col`` matrix (2 x N)."""
    return _tri_indices("triu_indices", np.triu_indices, row, col, offset, dtype, device)


# ---- cov, corrcoef ----------------------------------------------------------------------
def _cov_weights(name, w, n_obs, integral):
    if w is None:
        return None
    if w.dim() > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                           f"{name} with {w.dim()} dimensions")
    if w.numel() != n_obs:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                           f"observations in the input but got {w.numel()} != {n_obs}")
    wd = w.dtype
    if integral and (wd.is_floating_point or wd.is_complex or wd == _dt.bool):
        raise RuntimeError(f"cov(): expected fweights to have integral dtype but got fweights "
                           f"with {type_name(w.dtype)} dtype")
    if not integral and not wd.is_floating_point:
        raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got "
                           f"aweights with {type_name(w.dtype)} dtype")
    d = w._data
    # (vmap's logical tensors carry no values: the check is the unbatched call's)
    if backend_for_type(type(d)) is not None and bool((d < 0).any()):
        raise RuntimeError(f"cov(): {name} cannot be negative")
    return w


def _warn_dof():
    warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than "
                  "the number of observations.", UserWarning, stacklevel=4)


@overridable
def cov(input, *, correction=1, fweights=None, aweights=None):
    """Estimates the covariance matrix of the variables given by ``input`` (rows are
    variables, columns observations)."""
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.dim()} dimensions")
    x = input.unsqueeze(0) if input.dim() < 2 else input
    n_obs = x.shape[1]
    fw = _cov_weights("fweights", fweights, n_obs, True)
    aw = _cov_weights("aweights", aweights, n_obs, False)
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        x = x.to(_dt.get_default_dtype())
    w = fw if aw is None else (aw if fw is None else fw * aw)
    if w is None:
        avg = x.mean(1)
        w_sum = n_obs
        norm = n_obs - correction
    else:
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
        if correction == 0:
            norm = w_sum
        elif aw is None:
            norm = w_sum - correction
        else:
            norm = w_sum - correction * (w * aw).sum() / w_sum
    if isinstance(norm, Tensor):
        # the check reads data: only for concrete tensors (not under vmap or tracing)
        if getattr(norm, "_level", None) is None and bool((norm._data <= 0).all()):
            _warn_dof()
        norm = norm.clamp(min=0)
    elif norm <= 0:
        _warn_dof()
        norm = 0
    xm = x - avg.unsqueeze(1)
    xw = xm if w is None else xm * w
    c = xm.matmul(xw.t().conj())
    return (c / norm).squeeze()


@overridable
def corrcoef(input):
    """Pearson product-moment correlation coefficients of the variables (rows) of ``input``."""
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = c.diagonal()
    std = (d.real if d.is_complex() else d).sqrt()
    c = c / std.unsqueeze(1)
    c = c / std.unsqueeze(0)
    if c.is_complex():
        from .complex_ops import complex as _complex
        return _complex(c.real.clip(-1, 1), c.imag.clip(-1, 1))
    return c.clip(-1, 1)


# ---- dist, ravel, unravel_index ---------------------------------------------------------
@overridable
def dist(input, other, p=2):
    """The p-norm of ``input - other``."""
    check_tensor("dist", "input", 1, input)
    check_tensor("dist", "other", 2, other)
    return (input - other).norm(p)


@overridable
def ravel(input):
    """A contiguous flattened tensor (a view when possible)."""
    return input.reshape(-1)


@overridable
def unravel_index(indices, shape):
    """Converts flat indices into a tuple of coordinate tensors into an array of ``shape``."""
    if not isinstance(indices, Tensor):
        raise TypeError(f"expected 'indices' to be a Tensor, but got {type(indices).__name__}")
    if indices.dtype.is_floating_point or indices.dtype.is_complex or indices.dtype == _dt.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    idx = indices.to(_dt.int64)
    coords = []
    for s in reversed(shape):
        coords.append(idx.remainder(s))
        idx = idx.div(s, rounding_mode="floor")
    return tuple(reversed(coords))


# ---- block_diag -------------------------------------------------------------------------
@overridable
def block_diag(*tensors):
    """A block diagonal matrix from the given tensors (0-, 1- or 2-dimensional)."""
    blocks = []
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {t.dim()} dimensions")
        blocks.append(t.reshape(1, -1) if t.dim() < 2 else t)
    if not blocks:
        return zeros(1, 0)
    dt = functools.reduce(_dt.promote_types, [b.dtype for b in blocks])
    n_cols = builtins.sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        r, c = b.shape
        parts = [zeros(r, left, dtype=dt), b.to(dt), zeros(r, n_cols - left - c, dtype=dt)]
        rows.append(cat(parts, 1))
        left += c
    return cat(rows, 0)


# ---- trapezoid, cumulative_trapezoid ----------------------------------------------------
def _trapezoid_terms(name, y, x, dx, dim):
    """Per-interval areas along ``dim`` (un-summed)."""
    n = y.shape[dim]  # raises IndexError for a bad dim, as torch does
    lo = y.narrow(dim, 0, builtins.max(n - 1, 0))
    hi = y.narrow(dim, builtins.min(1, n), builtins.max(n - 1, 0))
    pair = lo + hi
    if x is None:
        return pair * ((1 if dx is None else dx) / 2)
    if x.dim() == 1:
        if x.shape[0] != n:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        d = x.diff()
        view = [1] * y.dim()
        view[dim % y.dim()] = builtins.max(n - 1, 0)
        d = d.reshape(view)
    else:
        d = x.diff(dim=dim)
    return pair * d / 2


def _check_x_dx(x, dx):
    if x is not None and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments: pass "
                        "either x or dx, not both")


@overridable
def trapezoid(y, x=None, *, dx=None, dim=-1):
    """Integrates ``y`` along ``dim`` with the trapezoidal rule (spacing ``x`` or ``dx``)."""
    _check_x_dx(x, dx)
    if y.dim() and y.shape[dim] == 0:
        return y.sum(dim) * 0  # torch: zeros like the sum (an integer y stays integral)
    return _trapezoid_terms("trapezoid", y, x, dx, dim).sum(dim)


@overridable
def trapz(y, x=None, *, dx=None, dim=-1):
    """Alias for `trapezoid`."""
    return trapezoid(y, x, dx=dx, dim=dim)


@overridable
def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """Cumulatively integrates ``y`` along ``dim`` with the trapezoidal rule."""
    _check_x_dx(x, dx)
    return _trapezoid_terms("cumulative_trapezoid", y, x, dx, dim).cumsum(dim)


# ---- histogram --------------------------------------------------------------------------
def histogram_range(values, rng, dim=0):
    """(leftmost, rightmost) bin edge of dimension ``dim`` of a histogram: ``rng`` if given,
    else the values' min and max (0 and 1 when there are none), checked as torch does and
    widened by 0.5 each way when equal."""
    if rng is not None:
        lo, hi = float(rng[0]), float(rng[1])
    elif values.size:
        lo, hi = float(values.min()), float(values.max())
    else:
        lo, hi = 0.0, 1.0
    if lo > hi:
        raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min "
                           f"{lo:g} max {hi:g} for dimension {dim}")
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histogramdd: dimension {dim}'s range [{lo:g}, {hi:g}] is "
                           f"not finite")
    return (lo - 0.5, hi + 0.5) if lo == hi else (lo, hi)


def _histogram_one(x, bins, edges_in, weight, rng, density):
    dt = x.dtype
    comp = np.float32 if dt.itemsize < 4 else dt
    xf = x.reshape(-1).astype(comp)
    if edges_in is None:
        lo, hi = histogram_range(xf, rng)
        edges = _linspace_kernel(np, start=lo, end=hi, steps=bins + 1, dtype=comp)  # torch's
    else:
        edges = edges_in.reshape(-1).astype(comp)
    xp = namespace_of(xf)
    if edges_in is None:
        edges = xp.asarray(edges)  # computed on the host from two numbers
    nb = edges.size - 1
    pos = xp.searchsorted(edges, xf, side="right") - 1
    pos[xf == edges[-1]] = nb - 1  # the last bin is closed on the right
    keep = (xf >= edges[0]) & (xf <= edges[-1]) & (pos >= 0) & (pos < nb)
    w = None if weight is None else weight.reshape(-1).astype(np.float64)[keep]
    hist = xp.bincount(pos[keep], weights=w, minlength=builtins.max(nb, 0))[:builtins.max(nb, 0)]
    hist = hist.astype(np.float64)
    if density:
        widths = xp.diff(edges.astype(np.float64))
        hist = hist / (hist.sum() * widths)
    return hist.astype(dt), edges.astype(dt)


def _histogram_kernel(xp, x, edges, weight, bins=None, range=None, density=False, nbatch=0):
    if x.dtype not in (np.float32, np.float64):
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{type_name(x.dtype)}'")
    if weight is not None and weight.dtype != x.dtype:
        raise RuntimeError(f"torch.histogramdd: if weight tensor is provided, input tensor and "
                           f"weight tensor should have the same dtype, but got "
                           f"input({x.dtype}), and weight({weight.dtype})")
    if nbatch == 0:
        return _histogram_one(x, bins, edges, weight, range, density)
    # leading batch dims (from vmap): one histogram per example, all of the same size
    lead = x.shape[:nbatch]
    n = int(np.prod(lead))
    xs = x.reshape((n,) + x.shape[nbatch:])
    es = None if edges is None else xp.broadcast_to(edges, lead + edges.shape[nbatch:]).reshape(
        (n,) + edges.shape[nbatch:])
    ws = None if weight is None else xp.broadcast_to(weight, x.shape).reshape(xs.shape)
    outs = [_histogram_one(xs[i], bins, None if es is None else es[i],
                           None if ws is None else ws[i], range, density)
            for i in builtins.range(n)]
    h = xp.stack([o[0] for o in outs]).reshape(lead + outs[0][0].shape) if n else \
        xp.zeros(lead + (bins if edges is None else edges.shape[-1] - 1,), x.dtype)
    e = xp.stack([o[1] for o in outs]).reshape(lead + outs[0][1].shape) if n else \
        xp.zeros(lead + (bins + 1 if edges is None else edges.shape[-1],), x.dtype)
    return h, e


def _histogram_shape(x, edges, weight, bins=None, range=None, density=False, nbatch=0):
    lead = tuple(x.shape[:nbatch])
    nb = bins if edges is None else edges.shape[-1] - 1
    return (lead + (nb,), x.dtype), (lead + (nb + 1,), x.dtype)


def _histogram_batch(op, args, bdims, params, batch_size):
    phys = []
    for a, b in zip(args, bdims):
        if isinstance(a, Tensor):
            a = a.movedim(b, 0) if b is not None else a.unsqueeze(0).expand(batch_size, *a.shape)
        phys.append(a)
    p = dict(params, nbatch=params.get("nbatch", 0) + 1)
    return op(*phys, **p), (0, 0)


# both outputs require grad in torch, whose backward raises
HISTOGRAM = Op("histogram", _histogram_kernel, **no_derivative("histogram", aten=True),
               shape=_histogram_shape, n_out=2, save_inputs=False, batch=_histogram_batch)


_HISTOGRAM_OVERLOADS = (
    " * (Tensor input, Tensor bins, *, Tensor weight = None, bool density = False, tuple of "
    "Tensors out = None)\n * (Tensor input, int bins = 100, *, tuple of floats range = None, "
    "Tensor weight = None, bool density = False, tuple of Tensors out = None)")


def _histogram_checks(input, bins, range, weight):
    """torch's argument checks of histogram that its kernel does not make."""
    if isinstance(bins, Tensor):
        if range is not None:
            raise TypeError(f"histogram() received an invalid combination of arguments - got "
                            f"(Tensor, Tensor, range=tuple), but expected one of:\n"
                            f"{_HISTOGRAM_OVERLOADS}")
        if bins.dim() != 1:
            raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but "
                               f"got {bins.dim()} dimensions in the bins tensor for dimension 0")
        if bins.numel() == 0:
            raise RuntimeError("torch.histogramdd: bins tensor should have at least 1 element, "
                               "but got 0 elements in the bins tensor for dimension 0")
    elif isinstance(bins, bool) or not isinstance(bins, (int, np.integer)):
        got = "bins=" + type(bins).__name__ if bins is None else type(bins).__name__
        raise TypeError(f"histogram() received an invalid combination of arguments - got "
                        f"(Tensor, {got}), but expected one of:\n{_HISTOGRAM_OVERLOADS}")
    if weight is not None and weight.numel() != input.numel():
        raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have the "
                           f"same shape as the input tensor excluding its innermost dimension, "
                           f"but got input with shape {[input.numel(), 1]} and weight "
                           f"with shape {list(weight.shape)}")


@overridable
def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):
    """Computes a histogram of the values in ``input``; returns ``(hist, bin_edges)``."""
    _histogram_checks(input, bins, range, weight)
    if isinstance(bins, Tensor):
        args, params = (input, bins, weight), {"density": bool(density)}
    else:
        if bins <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for "
                               f"dimension 0")
        params = {"bins": int(bins), "density": bool(density)}
        if range is not None:
            params["range"] = (float(range[0]), float(range[1]))
        args = (input, None, weight)
    hist, edges = apply(HISTOGRAM, args, params)
    if out is not None:
        from .._core.dispatch import write_out
        write_out(out[0], hist)
        write_out(out[1], edges)
        return _histogram_type(out[0], out[1])
    return _histogram_type(hist, edges)


# ---- renorm -----------------------------------------------------------------------------
def _renorm_check(input, p, dim, maxnorm):
    if input.dim() < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.dim()} "
                           f"dimensions")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(f"\"renorm_out\" not implemented for '{type_name(input.dtype)}'")


@overridable
def renorm(input, p, dim, maxnorm, *, out=None):
    """Each sub-tensor of ``input`` along ``dim`` rescaled to p-norm at most ``maxnorm``."""
    _renorm_check(input, p, dim, maxnorm)
    d = dim % input.dim()
    others = tuple(i for i in builtins.range(input.dim()) if i != d)
    norms = input.norm(p, dim=others, keepdim=True)
    # torch's kernel scales by maxnorm / (norm + 1e-7) where the norm exceeds maxnorm
    factor = where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    if factor.dtype != input.dtype and not input.dtype.is_complex:
        factor = factor.to(input.dtype)
    r = input * factor
    if out is not None:
        from .._core.dispatch import write_out
        return write_out(out, r)
    return r


def _renorm_(self, p, dim, maxnorm):
    _renorm_check(self, p, dim, maxnorm)
    src = self.clone() if self._requires_grad or self.grad_fn is not None else self
    return self.copy_(renorm(src, p, dim, maxnorm))


Tensor.renorm = lambda self, p, dim, maxnorm: renorm(self, p, dim, maxnorm)
Tensor.renorm_ = _renorm_
Tensor.cov = lambda self, *, correction=1, fweights=None, aweights=None: cov(
    self, correction=correction, fweights=fweights, aweights=aweights)
Tensor.corrcoef = lambda self: corrcoef(self)
Tensor.histogram = lambda self, bins=100, *, range=None, weight=None, density=False: histogram(
    self, bins, range=range, weight=weight, density=density)
Tensor.dist = lambda self, other, p=2: dist(self, other, p)
