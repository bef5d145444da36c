"""The shared parameterisation of Binomial and NegativeBinomial: a ``total_count`` broadcast
with either ``probs`` or ``logits`` (exactly one), the given one kept as ``_param``."""
from ember._core.tensor import Size

from .utils import broadcast_all


def init_count_and_param(dist, total_count, probs, logits):
    """Sets ``total_count`` and ``probs``/``logits`` on ``dist``; returns the batch shape."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    if probs is not None:
        dist.total_count, dist.probs = broadcast_all(total_count, probs)
        dist.total_count = dist.total_count.type_as(dist.probs)
    else:
        dist.total_count, dist.logits = broadcast_all(total_count, logits)
        dist.total_count = dist.total_count.type_as(dist.logits)
    dist._param = dist.probs if probs is not None else dist.logits
    return dist._param.shape


def expand_count_and_param(dist, cls, batch_shape, _instance):
    """``Distribution.expand`` for these parameters (torch's semantics for ``_instance``)."""
    new = dist._get_checked_instance(cls, _instance)
    batch_shape = Size(batch_shape)
    new.total_count = dist.total_count.expand(batch_shape)
    if "probs" in dist.__dict__:
        new.probs = dist.probs.expand(batch_shape)
        new._param = new.probs
    if "logits" in dist.__dict__:
        new.logits = dist.logits.expand(batch_shape)
        new._param = new.logits
    super(cls, new).__init__(batch_shape, validate_args=False)
    new._validate_args = dist._validate_args
    return new
