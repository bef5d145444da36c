"""``torch.histogramdd``: the histogram of points in D dimensions, with torch's bin edges
(``linspace`` over each dimension's range, in the input's dtype; the last bin closed on the
right) and errors.

Three operators, torch's: ``_histogramdd_bin_edges`` and ``_histogramdd_from_bin_cts``
(bins given as counts) and ``_histogramdd_from_bin_tensors`` (bins given as edges, which are
returned as they are).  None has a derivative: their outputs require grad when an input (or
weight, or bin tensor) does, and backward raises torch's error naming the operator."""
import builtins

import numpy as np

from .._core import dtype as _dt
from .._core.dispatch import overridable
from .._core.tensor import Tensor, _host
from . import _return_types as _rt
from ._helpers import Op, apply, no_derivative, type_name
from .creation import _linspace_kernel
from .misc import histogram_range

__all__ = ["histogramdd"]

histogramdd_t = _rt.structseq("histogramdd", ("hist", "bin_edges"))


def _points(input):
    return _host(input).reshape(-1, input.shape[-1]).astype(np.float64)


def _edges_from_counts(input, bins, range):
    """Each dimension's edges: ``bins[d] + 1`` values spaced evenly over its range."""
    x = _points(input)
    return [_linspace_kernel(np, start=lo, end=hi, steps=b + 1, dtype=input.dtype)
            for d, b in enumerate(bins)
            for lo, hi in [histogram_range(x[:, d], None if range is None else
                                           range[2 * d:2 * d + 2], d)]]


def _counts(input, weight, edges, density):
    """The (weighted, or density) count of the points in each cell of the given edges."""
    x = _points(input)
    D = x.shape[1]
    e64 = [_host(e).astype(np.float64) for e in edges]
    nb = [builtins.max(e.size - 1, 0) for e in e64]
    keep = np.ones(x.shape[0], dtype=bool)
    flat = np.zeros(x.shape[0], dtype=np.int64)
    for d, e in enumerate(e64):
        v = x[:, d]
        pos = np.searchsorted(e, v, side="right") - 1
        pos[v == e[-1]] = nb[d] - 1  # the last bin is closed on the right
        keep &= (v >= e[0]) & (v <= e[-1]) & (pos >= 0) & (pos < nb[d])
        flat = flat * nb[d] + np.clip(pos, 0, builtins.max(nb[d] - 1, 0))
    w = None if weight is None else _host(weight).reshape(-1).astype(np.float64)[keep]
    total = int(np.prod(nb))
    hist = np.bincount(flat[keep], weights=w, minlength=total)[:total].astype(np.float64)
    hist = hist.reshape(nb)
    if density:
        cell = np.ones(nb)
        for d, e in enumerate(e64):
            cell = cell * np.diff(e).reshape([-1 if i == d else 1 for i in builtins.range(D)])
        hist = hist / (hist.sum() * cell)
    return hist.astype(input.dtype)


# the binning runs on the host (a data-dependent search, as histogram's); the results go
# back to the input's backend
def _bin_edges_kernel(xp, input, weight, *, bins, range, density):
    return [xp.asarray(e) for e in _edges_from_counts(input, bins, range)]


def _from_bin_cts_kernel(xp, input, weight, *, bins, range, density):
    return xp.asarray(_counts(input, weight, _edges_from_counts(input, bins, range), density))


def _from_bin_tensors_kernel(xp, input, weight, *bins, density):
    return xp.asarray(_counts(input, weight, bins, density))


# vmap runs these once per sample (the loop fallback): torch has no batching rule for them
# either, and each sample's edges come from its own range.  No decomposition: the binning
# is a search on the host (ember.ops.decompositions.reduction names the reason)
_NO_BATCH = {"batch": "one histogram per sample through the loop fallback (torch has no rule)"}

BIN_EDGES = Op("_histogramdd_bin_edges", _bin_edges_kernel,
               **no_derivative("_histogramdd_bin_edges", aten=True), n_out=None,
               save_inputs=False, unsupported=_NO_BATCH,
               shape=lambda input, weight, *, bins, **p: [((b + 1,), input.dtype) for b in bins])
FROM_BIN_CTS = Op("_histogramdd_from_bin_cts", _from_bin_cts_kernel,
                  **no_derivative("_histogramdd_from_bin_cts", aten=True), save_inputs=False,
                  unsupported=_NO_BATCH,
                  shape=lambda input, weight, *, bins, **p: (tuple(bins), input.dtype))
FROM_BIN_TENSORS = Op("_histogramdd_from_bin_tensors", _from_bin_tensors_kernel,
                      **no_derivative("_histogramdd_from_bin_tensors", aten=True),
                      save_inputs=False, unsupported=_NO_BATCH,
                      shape=lambda input, weight, *bins, **p: (
                          tuple(builtins.max(b.shape[0] - 1, 0) for b in bins), input.dtype))


@overridable
def histogramdd(input, bins, *, range=None, weight=None, density=False, out=None):
    """Computes a multi-dimensional histogram of the values in ``input`` (its innermost
    dimension holds each point's coordinates): ``(hist, bin_edges)``.

    ``bins``: an int (bins in every dimension), a list of ints, or a list of 1-D tensors of
    bin edges; ``range``: the leftmost and rightmost edges of each dimension, flattened;
    ``weight``: one weight per point; ``density``: normalise to a probability density."""
    if out is not None:  # in torch's signature, but none of its overloads takes it
        raise TypeError("histogramdd() received an invalid combination of arguments - got "
                        "out=tuple, but no overload takes 'out'")
    if input.dim() < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    if input.dtype not in (_dt.float32, _dt.float64):
        raise NotImplementedError(f"\"histogramdd\" not implemented for "
                                  f"'{type_name(input.dtype)}'")
    D = input.shape[-1]
    per_dim = list(bins) if isinstance(bins, (list, tuple)) else [bins] * D
    if len(per_dim) != D:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost "
                           "dimension of the input.")
    if range is not None and len(range) != 2 * D:
        raise RuntimeError(f"torch.histogramdd: for a {D}-dimensional histogram range should "
                           f"have {2 * D} elements, but got {len(range)}")
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape[:-1]):
            raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have "
                               f"the same shape as the input tensor excluding its innermost "
                               f"dimension, but got input with shape {list(input.shape)} and "
                               f"weight with shape {list(weight.shape)}")
        if weight.dtype != input.dtype:
            raise RuntimeError(f"torch.histogramdd: if weight tensor is provided, input tensor "
                               f"and weight tensor should have the same dtype, but got "
                               f"input({input.dtype}), and weight({weight.dtype})")
    if per_dim and all(isinstance(b, Tensor) for b in per_dim):
        for d, b in enumerate(per_dim):
            if b.dtype != input.dtype:
                raise RuntimeError(
                    f"torch.histogramdd: input tensor and bins tensors should have the same "
                    f"dtype, but got input with dtype {type_name(input.dtype).lower()} and bins "
                    f"for dimension {d} with dtype {type_name(b.dtype).lower()}")
        hist = apply(FROM_BIN_TENSORS, (input, weight) + tuple(per_dim),
                     {"density": bool(density)})
        return histogramdd_t(hist, tuple(per_dim))
    for d, b in enumerate(per_dim):
        if b <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {b} for "
                               f"dimension {d}")
    params = {"bins": tuple(int(b) for b in per_dim), "density": bool(density),
              "range": None if range is None else tuple(float(r) for r in range)}
    edges = apply(BIN_EDGES, (input, weight), params)
    hist = apply(FROM_BIN_CTS, (input, weight), params)
    return histogramdd_t(hist, tuple(edges))
