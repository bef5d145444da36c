"""``linear_cross_entropy``: cross entropy of a linear projection's logits, optionally computed
over the batch in chunks so the (batch, classes) logits never exist at once (what LLM
vocabulary heads need), and the options that ask for the chunked form."""
import dataclasses
import math
import warnings

from ..._core import dtype as _dt
from ..._core.dispatch import overridable
from ...ops import cat
from .loss import cross_entropy

__all__ = ["linear_cross_entropy", "LinearCrossEntropyOptions"]

_ACC_DTYPES = (_dt.float16, _dt.bfloat16, _dt.float32, _dt.float64)


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """Asks `linear_cross_entropy` for its chunked form: the batch is processed
    ``batch_chunk_size`` rows at a time (by default a chunk as tall as the input is wide,
    ``chunking_method="aspect_ratio:k"`` k times that).  ``allow_retain_graph``,
    ``acc_policy`` and ``acc_dtype`` tune torch's fused kernels; ember's chunks accumulate in
    the input's dtype, so they are validated and otherwise have no effect."""
    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.acc_policy not in {"auto", "accurate", "balanced", "compact"}:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            if not sep:
                factor = "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        if not (self.batch_chunk_size is None or (isinstance(self.batch_chunk_size, int) and
                                                  self.batch_chunk_size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got "
                             f"{self.batch_chunk_size!r}")
        if self.acc_dtype is not None and self.acc_dtype not in _ACC_DTYPES:
            raise ValueError(f"acc_dtype must be one of {{None, torch.float16, torch.bfloat16, "
                             f"torch.float32, torch.float64}}, got {self.acc_dtype!r}. Pass "
                             f"acc_dtype=None to let the op pick automatically.")

    def _chunk_rows(self, in_features):
        if self.batch_chunk_size is not None:
            return self.batch_chunk_size
        factor = 2
        if self.chunking_method not in (None, "auto"):
            _, sep, f = self.chunking_method.partition(":")
            factor = int(f) if sep else 1
        return max(1, in_features * factor)


def _logits(input, linear_weight, linear_bias, num_classes, out_features):
    w = linear_weight.reshape((num_classes * math.prod(out_features), input.shape[-1]))
    z = input.matmul(w.t()).reshape(tuple(input.shape[:-1]) + (num_classes,) +
                                    tuple(out_features))
    return z if linear_bias is None else z + linear_bias


@overridable
def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,
                         reduction="mean", ignore_index=None, label_smoothing=0.0,
                         options=None):
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``.
    ``linear_weight`` is (classes, *out_features, in_features): extra dims make a
    K-dimensional loss.  ``ignore_index=None`` ignores no class.  With ``options`` (a
    `LinearCrossEntropyOptions`) the batch is processed in chunks; configurations the chunked
    form does not cover (K-dimensional, label smoothing, probability targets, other
    reductions) fall back to the plain form with torch's warning."""
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.dim()}")
    batch = tuple(input.shape[:-1])
    in_features = input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(f"expected equal input and linear_weight last dimensions "
                           f"(in_features), got {input.shape[-1]} and "
                           f"{linear_weight.shape[-1]}, respectively")
    num_classes = linear_weight.shape[0]
    out_features = tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(num_classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batch:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, (N, "
                           f"{in_features}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    probabilities = tuple(target.shape) == batch + (num_classes,) + out_features
    if probabilities and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains "
                           "probabilities")
    ignore = ignore_index if ignore_index is not None else -100
    kw = dict(weight=weight, ignore_index=ignore, label_smoothing=label_smoothing)
    if options is not None:
        chunked = not out_features and reduction in {"mean", "sum", "none"} and \
            label_smoothing == 0.0 and target.dtype == _dt.int64
        if not chunked:
            bias_shape = tuple(linear_bias.shape) if linear_bias is not None else None
            warnings.warn(f"linear_cross_entropy: ``options`` ignored; chunked path needs "
                          f"reduction in {{'mean','sum','none'}}, label_smoothing == 0, "
                          f"target.dtype == int64, out_features == (). Got "
                          f"reduction={reduction!r}, label_smoothing={label_smoothing}, "
                          f"target.dtype={target.dtype}, out_features={out_features}, "
                          f"tracing=False, linear_bias.shape={bias_shape}.", stacklevel=2)
        else:
            return _chunked(input, linear_weight, target, linear_bias, num_classes,
                            reduction, options._chunk_rows(in_features), kw)
    logits = _logits(input, linear_weight, linear_bias, num_classes, out_features)
    return cross_entropy(logits, target, reduction=reduction, **kw)


def _chunked(input, linear_weight, target, linear_bias, num_classes, reduction, rows, kw):
    """Per-row losses a chunk of rows at a time, reduced as cross_entropy reduces them (the
    mean divides by the summed class weights of the rows not ignored)."""
    x, t = (input, target) if input.dim() == 2 else (input.unsqueeze(0), target.unsqueeze(0))
    losses = [cross_entropy(_logits(x[i:i + rows], linear_weight, linear_bias, num_classes,
                                    ()), t[i:i + rows], reduction="none", **kw)
              for i in range(0, x.shape[0], rows)]
    per_row = cat(losses, 0) if losses else x.new_zeros((0,))
    if reduction == "none":
        return per_row if input.dim() == 2 else per_row[0]
    if reduction == "sum":
        return per_row.sum()
    keep = t != kw["ignore_index"]
    w = kw["weight"]
    safe = t.masked_fill(~keep, 0)
    denom = (w[safe] if w is not None else safe.new_ones(safe.shape, dtype=per_row.dtype))
    denom = (denom * keep.to(per_row.dtype)).sum()
    return per_row.sum() / denom
