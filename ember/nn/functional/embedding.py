"""Embeddings: ``embedding`` and ``one_hot`` (primitives of ``ember.ops.nn.embedding``)
and ``embedding_bag`` (a composite reducing gathered rows per bag)."""
import numpy as np

from ..._core.dispatch import overridable
from ..._core.tensor import _version_of, wrap
from ..._core.state import STATE
from ...autograd import no_grad
from ...autograd.function import Function
from ...ops._helpers import apply
from ...ops.nn.embedding import EMBEDDING, ONE_HOT, _check_indices

__all__ = ["embedding", "embedding_bag", "one_hot"]


def _norm_padding_idx(padding_idx, n):
    if padding_idx is None:
        return -1
    if padding_idx > 0:
        if padding_idx >= n:
            raise AssertionError("Padding_idx must be within num_embeddings")
    elif padding_idx < 0:
        if padding_idx < -n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx = n + padding_idx
    return padding_idx


def _renorm_(weight, input, max_norm, norm_type):
    """torch's embedding_renorm_: rescale (in place) the referenced rows whose norm exceeds
    ``max_norm`` to norm ``max_norm``."""
    with no_grad():
        w = weight._data
        rows = np.unique(np.asarray(input._data).reshape(-1))
        if rows.size == 0:
            return
        sub = w[rows]
        if norm_type == float("inf"):
            norms = np.abs(sub).max(axis=1)
        else:
            norms = (np.abs(sub) ** norm_type).sum(axis=1) ** (1.0 / norm_type)
        big = norms > max_norm
        if big.any():
            scale = (max_norm / (norms[big] + 1e-7)).astype(w.dtype)
            w[rows[big]] = sub[big] * scale[:, None]
            _version_of(weight)[0] += 1


@overridable
def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Looks up rows of ``weight`` (num_embeddings, dim) at the indices in ``input``."""
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    padding_idx = _norm_padding_idx(padding_idx, weight.shape[0])
    if max_norm is not None:
        _check_indices(input._data)
        _renorm_(weight, input, max_norm, norm_type)
    params = {"padding_idx": padding_idx, "scale_freq": bool(scale_grad_by_freq)}
    if sparse and weight.requires_grad and STATE.grad_enabled:
        return _SparseGradEmbedding.apply(weight, input, padding_idx, params["scale_freq"])
    return apply(EMBEDDING, (weight, input), params)


class _SparseGradEmbedding(Function):
    """embedding whose weight gradient is a sparse COO tensor, as torch's ``sparse=True``:
    one row per looked-up index (repeats not summed, padding_idx's dropped)."""

    @staticmethod
    def forward(ctx, weight, input, padding_idx, scale_freq):
        # plain arguments (no dict): a captured program file encodes them
        ctx.save_for_backward(input)
        ctx.shape, ctx.padding_idx, ctx.scale_freq = tuple(weight.shape), padding_idx, scale_freq
        return apply(EMBEDDING, (weight.detach(), input),
                     {"padding_idx": padding_idx, "scale_freq": scale_freq})

    @staticmethod
    def backward(ctx, grad):
        from ...sparse import sparse_coo_tensor
        if ctx.scale_freq:
            raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with "
                               "sparse gradients")
        (input,) = ctx.saved_tensors
        idx = input.reshape(-1).long()
        rows = grad.reshape(-1, ctx.shape[1])
        if ctx.padding_idx >= 0:
            keep = idx != ctx.padding_idx
            idx, rows = idx[keep], rows[keep]
        return sparse_coo_tensor(idx.unsqueeze(0), rows, ctx.shape), None, None, None


@overridable
def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """Sums, averages or takes the max of bags of embeddings without materialising them all."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    if per_sample_weights is not None and per_sample_weights.shape != input.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights ({list(per_sample_weights.shape)}"
                         f") is not None, then it must have the same shape as the input "
                         f"({list(input.shape)})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.dim()}")
    idx = input._data
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated "
                             f"is a mini-batch of fixed length sequences. However, found "
                             f"offsets of type {type(offsets).__name__}")
        B, L = idx.shape
        offs = np.arange(0, B * L, L, dtype=np.int64)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
        include_last_offset = False
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        offs = np.asarray(offsets._data, dtype=np.int64)
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.dim()}")
    n = input.shape[0]
    if include_last_offset:
        offs = offs[:-1]
    if offs.size and offs[0] != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
                           f"has to start from position 0. However, got {int(offs[0])}")
    if offs.size and offs[-1] > n:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length ({n}), but got "
                           f"offsets[-1] of {int(offs[-1])}")
    B = offs.size
    bag = np.searchsorted(offs, np.arange(n), side="right") - 1
    pad = _norm_padding_idx(padding_idx, weight.shape[0]) if padding_idx is not None else -1
    emb = embedding(input, weight, None if pad < 0 else pad, max_norm, norm_type,
                    scale_grad_by_freq)
    keep = np.asarray(input._data) != pad
    D = weight.shape[1]
    bag_t = wrap(bag.astype(np.int64))
    if mode == "max":
        emb = emb[wrap(np.nonzero(keep)[0])] if not keep.all() else emb
        bk = wrap(bag[keep].astype(np.int64))
        return weight.new_zeros((B, D)).scatter_reduce(0, bk.unsqueeze(1).expand(-1, D), emb,
                                                       "amax", include_self=False)
    if per_sample_weights is not None:
        emb = emb * per_sample_weights.unsqueeze(1)
    if not keep.all():
        emb = emb * wrap(keep.astype(emb.dtype.np)).unsqueeze(1)
    out = weight.new_zeros((B, D)).index_add(0, bag_t, emb)
    if mode == "mean":
        counts = np.bincount(bag[keep], minlength=B).astype(out.dtype.np)
        out = out / wrap(np.maximum(counts, 1)).unsqueeze(1)
    return out


@overridable
def one_hot(tensor, num_classes=-1):
    """One-hot encoding of a LongTensor of class indices (num_classes=-1: max + 1)."""
    return apply(ONE_HOT, (tensor,), {"num_classes": int(num_classes)})
