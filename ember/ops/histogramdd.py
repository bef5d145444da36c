"""``torch.histogramdd``: the histogram of points in D dimensions (not differentiable), with
torch's bin edges (``linspace`` over each dimension's range, in the input's dtype; the last
bin closed on the right) and errors."""
import builtins

import numpy as np

from .._core import dtype as _dt
from .._core.dispatch import overridable
from .._core.tensor import Tensor, host_tensor
from . import _return_types as _rt
from ._helpers import type_name
from .creation import linspace
from .misc import histogram_range

__all__ = ["histogramdd"]

histogramdd_t = _rt.structseq("histogramdd", ("hist", "bin_edges"))


def _edges(x, d, bins, rng, dtype):
    lo, hi = histogram_range(x[:, d], None if rng is None else rng[2 * d:2 * d + 2], d)
    return linspace(lo, hi, bins + 1, dtype=dtype)


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
    x = input.detach().reshape(-1, D).numpy().astype(np.float64)
    edges = []
    for d, b in enumerate(per_dim):
        if isinstance(b, Tensor):
            edges.append(b.detach().to(input.dtype))
            continue
        if b <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {b} for "
                               f"dimension {d}")
        edges.append(_edges(x, d, int(b), range, input.dtype))
    e64 = [e.numpy().astype(np.float64) for e in edges]
    nb = [builtins.max(e.size - 1, 0) for e in e64]
    keep = np.ones(x.shape[0], dtype=bool)
    flat = np.zeros(x.shape[0], dtype=np.int64)
    for d, e in enumerate(e64):
        v = x[:, d]
        pos = np.searchsorted(e, v, side="right") - 1
        pos[v == e[-1]] = nb[d] - 1  # the last bin is closed on the right
        keep &= (v >= e[0]) & (v <= e[-1]) & (pos >= 0) & (pos < nb[d])
        flat = flat * nb[d] + np.clip(pos, 0, builtins.max(nb[d] - 1, 0))
    w = None if weight is None else weight.detach().reshape(-1).numpy().astype(np.float64)[keep]
    total = int(np.prod(nb))
    hist = np.bincount(flat[keep], weights=w, minlength=total)[:total].astype(np.float64)
    hist = hist.reshape(nb)
    if density:
        cell = np.ones(nb)
        for d, e in enumerate(e64):
            cell = cell * np.diff(e).reshape([-1 if i == d else 1 for i in builtins.range(D)])
        hist = hist / (hist.sum() * cell)
    return histogramdd_t(host_tensor(hist.astype(input.dtype.np), input), tuple(edges))
