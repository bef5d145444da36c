"""Distances: pairwise_distance, cosine_similarity, pdist and normalize (compositions of
ember ops, following torch's formulas so gradients agree)."""
import numpy as np

from ..._core.dispatch import overridable, write_out
from ..._core.tensor import wrap
from ...ops import broadcast_tensors

__all__ = ["pairwise_distance", "cosine_similarity", "pdist", "normalize"]


@overridable
def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """p-norm distance between the rows of ``x1`` and ``x2`` (``eps`` added to the difference)."""
    nd = max(x1.dim(), x2.dim())
    d = x1 - x2 + eps
    if nd == 0:
        return d.abs() if not keepdim else d.abs()
    return d.norm(p, nd - 1, keepdim)


@overridable
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """Cosine similarity between ``x1`` and ``x2`` along ``dim``; norms clamped below at eps."""
    x1, x2 = broadcast_tensors(x1, x2)
    n1 = x1.norm(2, dim, True).clamp_min(eps)
    n2 = x2.norm(2, dim, True).clamp_min(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


@overridable
def pdist(input, p=2):
    """p-norm distances between each pair of rows of an (N, M) input (upper triangle)."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    i, j = np.triu_indices(input.shape[0], 1)
    return (input[wrap(i)] - input[wrap(j)]).norm(p, 1)


@overridable
def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """Lp-normalises ``input`` along ``dim``: x / max(||x||_p, eps)."""
    denom = input.norm(p, dim, True).clamp_min(eps).expand_as(input)
    r = input / denom
    return r if out is None else write_out(out, r)
