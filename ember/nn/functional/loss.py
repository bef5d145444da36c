"""Loss functions (``torch.nn.functional`` losses).

cross_entropy with class indices, nll_loss and ctc_loss are fused primitives
(``ember.ops.nn.loss``).  The rest are compositions of ember ops, following torch's
formulas (so gradients match torch's, boundaries included).
"""
import math
import warnings

import numpy as np

from ..._core import dtype as _dt
from ..._core.dispatch import overridable
from ..._core.tensor import Tensor, host_tensor, wrap
from ...autograd import no_grad
from ...ops import arange, where, xlogy
from ...ops._helpers import apply, not_implemented, type_name
from ...ops._nondiff import refuse_grad
from ...ops.nn.loss import CROSS_ENTROPY, CTC_LOSS, CTC_LOSS_TENSOR, NLL_LOSS, ctc_check
from ...ops.softmax import log_softmax
from .activation import logsigmoid, softplus
from .distance import pairwise_distance

__all__ = ["l1_loss", "mse_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
           "poisson_nll_loss", "gaussian_nll_loss", "cosine_embedding_loss",
           "margin_ranking_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss",
           "hinge_embedding_loss", "multilabel_soft_margin_loss", "multi_margin_loss",
           "multilabel_margin_loss", "soft_margin_loss", "ctc_loss"]

_REDUCTIONS = ("none", "mean", "sum")


def legacy_get_string(size_average, reduce, emit_warning=True):
    """The reduction string for the deprecated ``size_average``/``reduce`` arguments."""
    if emit_warning:
        warnings.warn("size_average and reduce args will be deprecated, please use "
                      "reduction='mean' instead." if (size_average is None or size_average)
                      and (reduce is None or reduce) else
                      "size_average and reduce args will be deprecated, please use "
                      f"reduction='{_legacy(size_average, reduce)}' instead.", UserWarning,
                      stacklevel=3)
    return _legacy(size_average, reduce)


def _legacy(size_average, reduce):
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return "mean" if size_average and reduce else "sum" if reduce else "none"


def _red(size_average, reduce, reduction):
    if size_average is not None or reduce is not None:
        return legacy_get_string(size_average, reduce)
    return reduction


def _apply_reduction(loss, reduction):
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_reduction(reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _size_warning(input, target, stacklevel=3):
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({target.size()}) that is different to the input "
                      f"size ({input.size()}). This will likely lead to incorrect results due "
                      f"to broadcasting. Please ensure they have the same size.",
                      UserWarning, stacklevel=stacklevel)


# ---- regression -------------------------------------------------------------------------
@overridable
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error between ``input`` and ``target``."""
    _size_warning(input, target)
    reduction = _red(size_average, reduce, reduction)
    _check_reduction(reduction)
    loss = (input - target).abs()
    if weight is not None:
        loss = loss * weight
    return _apply_reduction(loss, reduction)


@overridable
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error between ``input`` and ``target``."""
    _size_warning(input, target)
    reduction = _red(size_average, reduce, reduction)
    _check_reduction(reduction)
    if input.is_complex() or target.is_complex():
        not_implemented("mse_cpu", (input if input.is_complex() else target).dtype.np)
    if (weight is None and isinstance(input, Tensor) and isinstance(target, Tensor)
            and input.dtype == target.dtype and input.dtype.is_floating_point
            and input.shape == target.shape):
        from ...ops.loss_kernels import MSE_LOSS  # (x - y) ** 2 and its gradient fused
        return MSE_LOSS(input, target, reduction=reduction)
    d = input - target
    loss = d * d
    if weight is not None:
        loss = loss * weight
    return _apply_reduction(loss, reduction)


@overridable
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """Smooth L1 loss: quadratic below ``beta``, linear above."""
    _size_warning(input, target)
    reduction = _red(size_average, reduce, reduction)
    _check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    z = (input - target).abs()
    loss = z if beta == 0 else where(z < beta, z * z * (0.5 / beta), z - 0.5 * beta)
    return _apply_reduction(loss, reduction)


@overridable
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """Huber loss: quadratic below ``delta``, delta-scaled linear above."""
    _size_warning(input, target)
    _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    z = (input - target).abs()
    loss = where(z < delta, z * z * 0.5, (z - 0.5 * delta) * delta)
    if weight is not None:
        loss = loss * weight
    return _apply_reduction(loss, reduction)


# ---- nll / cross entropy (fused) ---------------------------------------------------------
_CLASS_TARGET_DTYPES = (np.dtype(np.int64), np.dtype(np.uint8))


def _check_float_input(input, kernel):
    """torch's loss kernels exist for floating inputs only."""
    if not input.dtype.is_floating_point:
        not_implemented(kernel, input.dtype.np)


def _check_nll_shapes(input, target, name):
    if input.dim() < 1:
        raise IndexError("Dimension specified as 1 but tensor has no dimensions" if name
                         else "input tensor should be 1D or more")
    if target.dtype.np not in _CLASS_TARGET_DTYPES:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got "
                           f"{type_name(target.dtype)}")
    if input.dim() == 1:
        if target.dim() != 0:
            raise RuntimeError(f"0D or 1D target tensor expected, multi-target not supported"
                               if target.dim() > 1 else
                               f"Expected input batch_size (1) to match target batch_size "
                               f"({target.shape[0]}).")
        return
    if target.dim() == 0 or input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({target.shape[0] if target.dim() else 1}).") \
            if target.dim() else RuntimeError("0D or 1D target tensor expected, multi-target "
                                              "not supported")
    expect = tuple(input.shape[:1]) + tuple(input.shape[2:])
    if tuple(target.shape) != expect:
        raise RuntimeError(f"Expected target size {list(expect)}, got {list(target.shape)}"
                           if input.dim() > 2 else
                           "0D or 1D target tensor expected, multi-target not supported")


def _check_weight(weight, input):
    C = input.shape[1 if input.dim() > 1 else 0]
    if weight is not None and (weight.dim() != 1 or weight.numel() != C):
        raise RuntimeError(f"weight tensor should be defined either for all {C} classes or no "
                           f"classes but got weight tensor of shape: {list(weight.shape)}")


@overridable
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """The negative log likelihood loss (input holds log-probabilities, target class indices)."""
    reduction = _red(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_nll_shapes(input, target, "nll_loss")
    _check_float_input(input, "nll_loss_out_frame" if input.dim() <= 2 else
                       "nll_loss2d_forward_out_frame")
    _check_weight(weight, input)
    refuse_grad("nll_loss_forward", weight=weight)
    args = (input, target) if weight is None else (input, target, weight)
    return apply(NLL_LOSS, args, {"ignore_index": ignore_index, "reduction": reduction})


@overridable
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """Cross entropy between logits ``input`` and class indices or class probabilities."""
    reduction = _red(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    # torch runs log_softmax over dim 1 (dim 0 unbatched) first: its dtype error comes first
    _check_float_input(input, "log_softmax_lastdim_kernel_impl" if input.dim() <= 2 else
                       "log_softmax_kernel_impl")
    if input.dim() >= 1 and input.shape == target.shape:
        if not target.is_floating_point():
            raise RuntimeError(f"Expected floating point type for target with class "
                               f"probabilities, got {type_name(target.dtype)}")
        return _ce_probs(input, target, weight, reduction, label_smoothing)
    _check_nll_shapes(input, target, "cross_entropy")
    _check_weight(weight, input)
    refuse_grad("nll_loss_forward", weight=weight)
    args = (input, target) if weight is None else (input, target, weight)
    return apply(CROSS_ENTROPY, args, {"ignore_index": ignore_index, "reduction": reduction,
                                       "smoothing": float(label_smoothing)})


def _ce_probs(input, target, weight, reduction, smoothing):
    cdim = 1 if input.dim() > 1 else 0
    C = input.shape[cdim]
    _check_weight(weight, input)
    if smoothing:
        target = target * (1 - smoothing) + smoothing / C
    lp = log_softmax(input, cdim)
    if weight is not None:
        lp = lp * weight.reshape((C,) + (1,) * (input.dim() - cdim - 1))
    loss = -(lp * target).sum(cdim)
    if reduction == "mean":
        return loss.sum() / max(input.numel() // C, 1) if input.numel() else loss.sum() / 0.0
    return _apply_reduction(loss, reduction)


# ---- binary -------------------------------------------------------------------------------
@overridable
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """Binary cross entropy between probabilities ``input`` and ``target`` (logs clamped at
    -100 like torch)."""
    reduction = _red(size_average, reduce, reduction)
    _check_reduction(reduction)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.size()}) that is different to the input "
                         f"size ({input.size()}) is deprecated. Please ensure they have the same "
                         f"size.")
    if target.dtype != input.dtype:
        raise RuntimeError(f"Found dtype {type_name(target.dtype)} but expected "
                           f"{type_name(input.dtype)}")
    refuse_grad("binary_cross_entropy", weight=weight)
    # the kernel checks that input and target lie in [0, 1], as torch's does
    from ...ops.loss_kernels import BINARY_CROSS_ENTROPY  # torch's finite derivative at 0 and 1
    loss = BINARY_CROSS_ENTROPY(input, target)
    if weight is not None:
        loss = loss * weight
    return _apply_reduction(loss, reduction)


@overridable
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """Sigmoid + binary cross entropy in one numerically stable expression."""
    reduction = _red(size_average, reduce, reduction)
    _check_reduction(reduction)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.size()}) must be the same as input size "
                         f"({input.size()})")
    refuse_grad("binary_cross_entropy_with_logits", weight=weight, pos_weight=pos_weight)
    ls = logsigmoid(input)
    if pos_weight is not None:
        loss = (1 - target) * input - ((pos_weight - 1) * target + 1) * ls
    else:
        loss = (1 - target) * input - ls
    if weight is not None:
        loss = loss * weight
    return _apply_reduction(loss, reduction)


@overridable
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """The Kullback-Leibler divergence loss (``input`` holds log-probabilities)."""
    if size_average is not None or reduce is not None:
        reduction = legacy_get_string(size_average, reduce)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", UserWarning, stacklevel=2)
    if reduction not in _REDUCTIONS + ("batchmean",):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.dim() else loss.sum()
    return _apply_reduction(loss, reduction)


@overridable
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """Negative log likelihood loss with a Poisson distribution of the target."""
    reduction = _red(size_average, reduce, reduction)
    _check_reduction(reduction)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        st = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss = loss + where(target > 1, st, 0)
    return _apply_reduction(loss, reduction)


@overridable
def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Gaussian negative log likelihood loss."""
    if isinstance(var, (int, float)):
        var = input.new_full(input.shape, float(var)) if hasattr(input, "new_full") else var
    if var.shape != input.shape:
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in _REDUCTIONS:
        raise ValueError(reduction + " is not valid")
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    d = input - target
    loss = 0.5 * (var.log() + d * d / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _apply_reduction(loss, reduction)


# ---- margin / embedding losses ------------------------------------------------------------
@overridable
def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(x1, x2) for target 1, max(0, cos(x1, x2) - margin) for target -1."""
    reduction = _red(size_average, reduce, reduction)
    _check_reduction(reduction)
    if input1.dim() != input2.dim() or input1.dim() - 1 != target.dim() or input1.dim() > 2:
        raise RuntimeError(f"cosine_embedding_loss(): expected {input1.dim()}D target tensor "
                           f"or the inputs to be 1D or 2D, got input1 {list(input1.shape)}, "
                           f"input2 {list(input2.shape)}, target {list(target.shape)}")
    dim = input1.dim() - 1
    eps = 1e-12
    prod = (input1 * input2).sum(dim)
    m1 = (input1 * input1).sum(dim) + eps
    m2 = (input2 * input2).sum(dim) + eps
    cos = prod / (m1 * m2).sqrt()
    loss = where(target == 1, 1 - cos, 0) + where(target == -1, (cos - margin).clamp_min(0), 0)
    return _apply_reduction(loss, reduction)


@overridable
def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -target * (input1 - input2) + margin)."""
    reduction = _red(size_average, reduce, reduction)
    _check_reduction(reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {input1.size()}, input2: {input2.size()}, "
                           f"target: {target.size()} ")
    loss = (-target * (input1 - input2) + margin).clamp_min(0)
    return _apply_reduction(loss, reduction)


@overridable
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with the p-norm pairwise distance."""
    reduction = _red(size_average, reduce, reduction)
    _check_reduction(reduction)
    a, pp, n = anchor.dim(), positive.dim(), negative.dim()
    if not (a == pp == n):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {a}D, positive {pp}D, "
                           f"and negative {n}D inputs")
    return _triplet(anchor, positive, negative,
                    lambda x, y: pairwise_distance(x, y, p, eps), margin, swap, reduction)


def _triplet(anchor, positive, negative, dist, margin, swap, reduction):
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        from ...ops import minimum
        d_neg = minimum(d_neg, dist(positive, negative))
    loss = (margin + d_pos - d_neg).clamp_min(0)
    return _apply_reduction(loss, reduction)


@overridable
def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """Triplet margin loss with a custom distance function (pairwise_distance by default)."""
    if margin <= 0:
        raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, "
                         f"got {margin} instead")
    _check_reduction(reduction)
    return _triplet(anchor, positive, negative, distance_function or pairwise_distance, margin,
                    swap, reduction)


@overridable
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """x for target 1, max(0, margin - x) for target -1."""
    reduction = _red(size_average, reduce, reduction)
    _check_reduction(reduction)
    loss = where(target != 1, (margin - input).clamp_min(0), 0) + where(target != -1, input, 0)
    return _apply_reduction(loss, reduction)


@overridable
def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """Multi-label one-versus-all loss based on max-entropy."""
    reduction = _red(size_average, reduce, reduction)
    _check_reduction(reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    cdim = input.dim() - 1
    loss = loss.sum(cdim) / input.shape[cdim]
    return _apply_reduction(loss, reduction)


def _margin_input(input, target, name):
    if input.dim() > 2 or (input.dim() == 2 and target.dim() != 1 and name == "multi_margin"):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {list(input.shape)}")
    return input if input.dim() == 2 else input.reshape(1, -1)


@overridable
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """Multi-class hinge loss: sum_j max(0, margin - x[y] + x[j])^p / C over j != y."""
    reduction = _red(size_average, reduce, reduction)
    _check_reduction(reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    refuse_grad("multi_margin_loss", weight=weight)
    x = _margin_input(input, target, "multi_margin")
    t = target.reshape(-1)
    C = x.shape[1]
    td = t._data
    # under vmap the values are not readable here (`logical`): gather's bounds check raises
    if not getattr(td, "logical", False) and td.size and ((td < 0) | (td >= C)).any():
        raise RuntimeError("target out of range")
    xy = x.gather(1, t.unsqueeze(1))
    z = (margin - xy + x).clamp_min(0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight[t].unsqueeze(1)
    z = where(t.unsqueeze(1) == arange(C).unsqueeze(0), 0, z)
    loss = z.sum(1) / C
    if input.dim() < 2:
        loss = loss.reshape(target.shape)
    return _apply_reduction(loss, reduction)


@overridable
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Multi-class multi-label hinge loss (target: class indices padded with -1)."""
    reduction = _red(size_average, reduce, reduction)
    _check_reduction(reduction)
    x = _margin_input(input, target, "multilabel_margin")
    t = target._data.reshape(x.shape)
    C = x.shape[1]
    counts = np.zeros(x.shape, dtype=x.dtype.np)
    for i in range(t.shape[0]):
        for j in t[i]:
            if j < 0:
                break
            if j >= C:
                raise RuntimeError(f"target index out of bounds: {j}")
            counts[i, j] += 1
    cnt = wrap(counts)
    other = wrap((counts == 0).astype(counts.dtype))
    pair = (1 - x.unsqueeze(2) + x.unsqueeze(1)).clamp_min(0)
    loss = (pair * cnt.unsqueeze(2) * other.unsqueeze(1)).sum((1, 2)) / C
    if input.dim() < 2:
        loss = loss.reshape(())
    return _apply_reduction(loss, reduction)


@overridable
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Two-class logistic loss: log(1 + exp(-target * input))."""
    reduction = _red(size_average, reduce, reduction)
    _check_reduction(reduction)
    refuse_grad("soft_margin_loss", target=target)
    loss = softplus(-target * input)
    return _apply_reduction(loss, reduction)



# ---- CTC ---------------------------------------------------------------------------------
def _lengths(x, name):
    if isinstance(x, Tensor):
        return tuple(int(v) for v in x.cpu()._data.reshape(-1))  # lengths steer host loops
    if isinstance(x, int):
        return (x,)
    return tuple(int(v) for v in x)


def _per_example(x):
    # a vmap-batched tensor holds shape metadata (marked `logical`), not values to read
    return isinstance(x, Tensor) and getattr(x._data, "logical", False)


def _length_tensor(x, like):
    if isinstance(x, Tensor):
        return x.reshape(-1)
    return host_tensor(np.asarray(_lengths(x, ""), dtype=np.int64), like)


@overridable
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """The Connectionist Temporal Classification loss (log_probs: (T, N, C) or (T, C))."""
    _check_reduction(reduction)
    if log_probs.dtype not in (_dt.float32, _dt.float64):
        raise NotImplementedError(f"\"ctc_loss_cpu\" not implemented for "
                                  f"'{type_name(log_probs.dtype)}'")
    unbatched = log_probs.dim() == 2
    if unbatched:  # 1-d targets stay concatenated (of one sequence), as torch reads them
        log_probs = log_probs.unsqueeze(1)
    T, N, C = log_probs.shape
    params = {"blank": blank, "zero_inf": zero_infinity}
    if _per_example(input_lengths) or _per_example(target_lengths):
        # per-example lengths under vmap: an operator that takes them as tensors
        il, tl = (_length_tensor(x, log_probs) for x in (input_lengths, target_lengths))
        loss = apply(CTC_LOSS_TENSOR, (log_probs, targets, il, tl), params)
        if reduction == "mean":
            return (loss / tl.reshape(-1).clamp_min(1).to(loss.dtype)).mean()
    else:
        in_lens = _lengths(input_lengths, "input_lengths")
        tgt_lens = _lengths(target_lengths, "target_lengths")
        ctc_check(T, N, C, tuple(targets.shape), in_lens, tgt_lens, blank)
        loss = apply(CTC_LOSS, (log_probs, targets),
                     dict(params, in_lens=in_lens, tgt_lens=tgt_lens))
        if reduction == "mean":
            tl = host_tensor(np.maximum(np.asarray(tgt_lens, dtype=loss.dtype.np), 1), loss)
            return (loss / tl).mean()
    if reduction == "sum":
        return loss.sum()
    return loss.squeeze(0) if unbatched else loss
